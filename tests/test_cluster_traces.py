"""Trace loaders: small samples written here in each published layout ([acme-trace] Seren and Kalos,
[helios-trace], [philly-trace], [pai-trace]), read back to the jobs and statistics they hold; a bad row
is an error at its file, line and column."""

from __future__ import annotations

import io
import json

import pytest

from twin.lang import limits
from twin.twins.cluster import traces
from twin.twins.cluster.site import uniform

SERE_N = """job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time
5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0
5778469,u5907,1,8,128,Other,COMPLETED,2023-03-01 00:23:58+08:00,2023-03-01 00:24:11+08:00,2023-03-01 01:09:04+08:00,2693,13,21544.0
5778470,u0001,32,256,2048,Pretrain,CANCELLED,2023-03-01 01:00:00+08:00,2023-03-01 02:00:00+08:00,2023-03-01 12:00:00+08:00,36000,3600,9216000.0
5778471,u0002,0,0,16,Other,COMPLETED,2023-03-01 01:30:00+08:00,2023-03-01 01:30:00+08:00,2023-03-01 01:31:00+08:00,60,0,0.0
"""
HELIOS = """job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0
1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,2020-06-09 18:45:36,249,0
1425513,uzqls,vcpDC,1,1,1,CANCELLED,2020-06-09 18:41:28,2020-06-09 18:41:28,2020-06-17 14:15:21,675233,0
"""
PAI = """job1,worker,2,Terminated,1000,4600,600,29.3,100,V100
job1,ps,1,Terminated,1000,4600,400,10.0,0,
job2,worker,1,Failed,2000,2100,600,29.3,50,T4
job3,worker,4,Terminated,,,600,29.3,100,V100
"""


def philly() -> str:
    jobs = [{"status": "Pass", "vc": "ee9e8c", "jobid": "application_1", "submitted_time": "2017-10-07 01:11:39", "user": "ce2f4c",
             "attempts": [{"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
                           "detail": [{"ip": "m47", "gpus": [f"gpu{i}" for i in range(8)]}]},
                          {"start_time": "2017-10-07 01:13:30", "end_time": "2017-10-09 06:53:12",
                           "detail": [{"ip": "m412", "gpus": [f"gpu{i}" for i in range(8)]}]}]},
            {"status": "Killed", "vc": "ee9e8c", "jobid": "application_2", "submitted_time": "2017-10-07 02:00:00", "user": "a",
             "attempts": [{"start_time": "2017-10-07 02:00:10", "end_time": "2017-10-07 03:00:10",
                           "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}, {"ip": "m2", "gpus": ["gpu0", "gpu1"]}]}]},
            {"status": "Failed", "vc": "x", "jobid": "application_3", "submitted_time": "2017-10-07 02:30:00", "user": "b", "attempts": []}]
    return json.dumps(jobs, indent=4)


def parse(text: str, fmt: str):
    return traces.parse(io.StringIO(text, newline=""), f"sample.{fmt}", fmt)


def test_acme_seren_rows_become_jobs_with_their_run_time_and_the_statistics_say_what_was_read():
    tr = parse(SERE_N, "acme")
    assert list(tr.gpus) == [8, 8, 256] and list(tr.work) == [117.0, 2693.0, 36000.0]
    assert list(tr.submit) == [0.0, 336.0, 2498.0]  # seconds after the first submission (+08:00 kept)
    assert list(tr.cancelled) == [0, 0, 1] and tr.skipped == {"no GPU": 1}
    st = traces.statistics(tr)
    assert st["jobs"] == 3 and st["states"] == {"CANCELLED": 1, "COMPLETED": 1, "FAILED": 1}
    assert st["gpu_hours"] == pytest.approx((8 * 117 + 8 * 2693 + 256 * 36000) / 3600)
    assert st["by_size"]["256-1023"]["gpu_time_share"] == pytest.approx(256 * 36000 / (8 * 117 + 8 * 2693 + 256 * 36000))


def test_helios_rows_and_a_negative_duration_is_located():
    tr = parse(HELIOS, "helios")
    assert list(tr.gpus) == [1, 4, 1] and list(tr.work) == [36848.0, 249.0, 675233.0]
    bad = HELIOS.replace("2020-06-09 18:45:36", "2020-06-09 18:40:00")
    with pytest.raises(traces.TraceError) as e:
        parse(bad, "helios")
    d = e.value.diagnostic
    assert (d.file, d.line, d.col) == ("sample.helios", 3, bad.splitlines()[2].index("2020-06-09 18:40:00") + 1)
    assert "negative duration" in d.message and "before start_time" in d.message


@pytest.mark.parametrize("field,value,col_of,words", [
    ("gpu_num", "-2", "gpu_num", "not a whole number"),
    ("gpu_num", "two", "gpu_num", "not a number"),
    ("submit_time", "yesterday", "submit_time", "not a time"),
])
def test_a_bad_acme_row_is_an_error_at_its_line_and_column(field, value, col_of, words):
    lines = SERE_N.splitlines()
    header = lines[0].split(",")
    row = lines[2].split(",")
    row[header.index(field)] = value
    lines[2] = ",".join(row)
    with pytest.raises(traces.TraceError) as e:
        parse("\n".join(lines) + "\n", "acme")
    d = e.value.diagnostic
    assert d.line == 3 and d.col == lines[2].index(value) + 1 and words in d.message


def test_a_trace_without_the_layouts_columns_names_them():
    with pytest.raises(traces.TraceError) as e:
        parse("id,gpus\n1,8\n", "helios")
    assert e.value.diagnostic.line == 1 and "job_id, gpu_num, state, submit_time, start_time, end_time" in e.value.diagnostic.message


def test_philly_jobs_take_their_first_attempts_gpus_and_every_attempts_run_time():
    tr = parse(philly(), "philly")
    assert list(tr.gpus) == [8, 4]
    assert list(tr.work) == [74.0 + (2 * 86400 + 5 * 3600 + 39 * 60 + 42), 3600.0]
    assert tr.skipped == {"never ran": 1} and tr.states == {"Pass": 1, "Killed": 1}
    text = philly().replace('"end_time": "2017-10-07 03:00:10"', '"end_time": "2017-10-07 01:00:10"')
    with pytest.raises(traces.TraceError) as e:
        parse(text, "philly")
    d = e.value.diagnostic
    assert d.line == text.splitlines().index("    {", 20) + 1 and "application_2" in d.message


def test_pai_tasks_group_into_jobs_with_gpus_in_percent():
    tr = parse(PAI, "pai")
    assert list(tr.gpus) == [2, 1]  # 2 x 100% (the ps asks none); 1 x 50% rounds up to one GPU
    assert list(tr.work) == [3600.0, 100.0] and list(tr.submit) == [0.0, 1000.0]
    assert tr.skipped == {"never ran": 1}
    with pytest.raises(traces.TraceError) as e:
        parse(PAI.replace("2000,2100", "2000,1900"), "pai")
    assert e.value.diagnostic.line == 3 and "negative duration" in e.value.diagnostic.message


def test_a_job_larger_than_the_site_is_located_and_the_span_is_cut():
    site = uniform(zones=1, racks_per_zone=4, servers_per_rack=2, gpus_per_server=8)  # 64 GPUs
    tr = parse(SERE_N, "acme")
    with pytest.raises(traces.TraceError) as e:
        traces.jobset_of(tr, site, "training", 0.0, 86400.0)
    assert e.value.diagnostic.line == 4 and "more than the site's 64" in e.value.diagnostic.message
    small = parse(HELIOS, "helios")
    js = traces.jobset_of(small, site, "training", 20.0, 86400.0)
    assert len(js) == 2 and js.submit.tolist() == [6.0, 7.0]  # the first job falls before the start


def test_the_row_count_is_checked_as_rows_come(monkeypatch):
    monkeypatch.setenv(limits.ENV, "cluster_jobs=2")
    assert len(parse("".join(HELIOS.splitlines(True)[:3]), "helios").submit) == 2
    with pytest.raises(limits.CostError):
        parse(HELIOS, "helios")

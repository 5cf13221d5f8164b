"""``twin validate-jobs``: the job twin's validation table (twin/twins/workload/validation.py) on the command line."""

from __future__ import annotations

import typer

from twin.exits import INVALID as EXIT_INVALID
from twin.lang.diagnostics import SpecError


def register(app, out, err, emit_json) -> None:
    """Add ``twin validate-jobs`` to the ``twin`` command (kept here so twin/cli/app.py stays a table of verbs)."""

    @app.command("validate-jobs")
    def validate_jobs(
        as_json: bool = typer.Option(False, "--json", help="Print every row and the summary as JSON."),
        fit: bool = typer.Option(False, "--fit", help="Rerun the software stacks' calibration on the open set and print the constants."),
        holdout: bool = typer.Option(False, "--holdout", help="Calibrate each published series on its smallest run alone (twin "
                                     "calibrate --holdout smallest) and print the error on the rest of the series."),
    ) -> None:
        """Print every published training and collective row the job twin is held to, with its source
        (paper, table, row), inputs, the twin's prediction, the error and the convention compared in.

        The open validation set: Llama 3 Table 4 (sites/meta-24k-roce.yaml), Megatron-LM SC'21 Table 1
        (sites/selene-a100.yaml), nccl-tests AllReduce on one DGX H100, and the rows each added stack is set
        on (NVIDIA's Megatron-Bridge LLAMA3_8B row, SC'21 Table 2's ZeRO-3 384-GPU row); out of sample
        (never calibrated on): the other Megatron-Bridge H100 FP8 rows (sites/dgx-h100-pod.yaml) and the
        other SC'21 Table 2 rows. Runs from a source checkout (it compiles the example sites).

        Example: twin validate-jobs

        Example: twin validate-jobs --json > validation.json

        Example: twin validate-jobs --holdout
        """
        from twin.twins.workload import validation

        log = (lambda m: None) if as_json else (lambda m: err.print(f"  {m}", markup=False))
        try:
            if fit:
                res = validation.fit(log)
                if as_json:  # by constant: {"kernel_share": {stack: value}, "zero3_host": {...}}
                    emit_json({c: {k: v for k, v in res.items() if validation.FIT_CONSTANT[k] == c}
                               for c in dict.fromkeys(validation.FIT_CONSTANT.values())})
                else:
                    for k, v in res.items():
                        out.print(f"{k}: {validation.FIT_CONSTANT[k]} {v}", markup=False)
                raise typer.Exit(0)
            if holdout:
                series = validation.holdout(log)
                if as_json:
                    emit_json({"holdout": series})
                else:
                    out.print(validation.holdout_table(series), markup=False)
                raise typer.Exit(0)
            rows = validation.run(log)
        except FileNotFoundError as e:
            err.print(str(e), style="red", markup=False)
            raise typer.Exit(EXIT_INVALID) from None
        except SpecError as e:  # an example site of the checkout no longer compiles (a plan that no longer fits)
            for d in e.diagnostics:
                err.print(d.format(), style="red", markup=False)
            err.print("validate-jobs: an example site of the open set does not compile", style="red", markup=False)
            raise typer.Exit(EXIT_INVALID) from None
        if as_json:
            emit_json({"rows": [r.as_dict() for r in rows], "summary": validation.summary(rows)})
        else:
            out.print(validation.table(rows), markup=False)
        raise typer.Exit(0)

"""The power and thermal twin: the site's draw over time as busways and the utility see it.

Entry point: :func:`twin.twins.power.run.simulate_power` (``twin simulate`` calls it for a scenario's
``power:`` section). See docs/twins/power.md and ARCHITECTURE.md for the modules.
"""

"""The cluster twin: a month of the whole site, every job, its scheduler and its failures on one clock."""

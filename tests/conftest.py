"""The whole suite's own plug-ins: hypothesis profiles (`ci` for `make test`, `explore` for
`make explore`) and the slowest modules' wall time at the end of a run."""

pytest_plugins = ["tests.plugins.hypothesis_profiles", "tests.plugins.module_times"]

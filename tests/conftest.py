"""The whole suite's own plug-ins: hypothesis profiles (`ci` for `make test`, `explore` for
`make explore`), the slowest modules' wall time at the end of a run, the backstop that ends
a test pytest-timeout could not, kgroup compiled to bytecode before the run, and the files
a test left open in its tmp_path closed after its module."""

pytest_plugins = ["tests.plugins.hypothesis_profiles", "tests.plugins.module_times",
                  "tests.plugins.hang_backstop", "tests.plugins.bytecode",
                  "tests.plugins.open_files"]

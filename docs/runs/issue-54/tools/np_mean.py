# imports numpy as a user's program would, then runs the example mechanism
import numpy  # noqa: F401
import runpy, sys
sys.argv = ["clamped_mean_min_rows.py"] + sys.argv[1:]
runpy.run_path("/work/main/examples/exec/clamped_mean_min_rows.py", run_name="__main__")

import sys, runpy
sys.path.insert(0, "experiments")
import phase_buffered_prototype as s48_tandem
s48_tandem.install()
sys.argv = ["contention_accuracy.py"] + sys.argv[1:]
runpy.run_path("benchmarks/contention_accuracy.py", run_name="__main__")

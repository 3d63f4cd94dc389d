"""pytest plugin for a device run (EXPERIMENTS.md H12): the library's register panels in CUDA
C for the whole run (``schedules.CUDA_PANEL``). ``PYTHONPATH=bench/devscripts python3 -m
pytest -p cuda_panel_on ...``"""
import adaptqr.paths.schedules as _s

_s.CUDA_PANEL = True

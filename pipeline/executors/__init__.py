"""Where per-session steps run: `local` (this machine: in process, or a process pool) or `ray` (a cluster).

The engine plans and records; an executor only runs `SessionJob`s and hands back their `StepRun`s.
The driver alone writes state and holds the build lock.
"""

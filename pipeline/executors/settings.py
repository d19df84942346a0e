"""Settings of the executors (`[tool.rescue.executor]` in pyproject.toml): where Ray is, and what each step
asks the cluster for. The local executor needs none (`-j N` on the command line)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class StepResources(BaseModel):
    """What one worker of a step asks Ray for. A model step's worker is an actor that keeps its model loaded."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_cpus: float = Field(1.0, gt=0, description="CPUs reserved per worker (Ray also sets OMP_NUM_THREADS to it)")
    num_gpus: float = Field(0.0, ge=0, description="share of one GPU per worker, asked for only when the cluster "
                            "has GPUs and the step runs on CUDA; 0.25 = four workers share one GPU")
    workers: int = Field(0, ge=0, description="model steps: actors (each loads the model once); 0 = as many as "
                         "the cluster's CPUs/GPUs fit, at most one per session. Ignored for plain-task steps")


class ExecutorSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ray_address: str = Field("auto", description="'auto' = the cluster `ray start` runs on this machine (or "
                             "$RAY_ADDRESS); 'local' = a private Ray on this machine for this build; or HOST:PORT")
    max_retries: int = Field(3, ge=0, description="how often a job whose worker died is run again")
    ingest: StepResources = StepResources()
    transcribe: StepResources = StepResources(num_gpus=0.5)
    diarize: StepResources = StepResources(num_gpus=0.25)
    rows: StepResources = StepResources()

    def resources(self, step: str) -> StepResources:
        """A step without its own section (a later stage) gets the defaults."""
        found = getattr(self, step, None)
        return found if isinstance(found, StepResources) else StepResources()

"""A sweep's jobs as Ray tasks: one actor per worker process holds one model, loaded once;
the driver writes each result into the output folder as it arrives, so an interrupted
sweep keeps what finished, exactly as `strait sweep` does."""

import json
import sys
import time

from . import _native


def sweep_on_ray(plan, out, ray_address):
    import ray

    if not ray.is_initialized():
        ray.init(address=None if ray_address == "local" else ray_address)

    @ray.remote(num_cpus=1)
    class Worker:
        def __init__(self, model):
            self.model = _native.Model(model, False, False, "strait")

        def run(self, job):
            return self.model.run_job(job)

    jobs = _native.pending_jobs(plan, out)
    by_model = {}
    for model, job in jobs:
        by_model.setdefault(model, []).append(job)
    cpus = max(1, int(ray.available_resources().get("CPU", 1)))
    pending = {}
    for model, model_jobs in by_model.items():
        workers = [Worker.remote(model) for _ in range(min(cpus, len(model_jobs)))]
        for i, job in enumerate(model_jobs):
            pending[workers[i % len(workers)].run.remote(job)] = job
    done, start = 0, time.monotonic()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            pending.pop(ref)
            _native.write_result(out, ray.get(ref))
            done += 1
            secs = time.monotonic() - start
            print(f"sweep on ray: {done}/{len(jobs)} jobs · {secs:.0f} s", file=sys.stderr)
    return json.loads(_native.finish(plan, out))

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
        # Rebinding `workers` drops the previous model's handles: its actors end once their
        # tasks are done and give their CPUs to the next model's.
        workers = [Worker.remote(model) for _ in range(min(cpus, len(model_jobs)))]
        for i, job in enumerate(model_jobs):
            pending[workers[i % len(workers)].run.remote(job)] = job
    done, failed, start = 0, [], time.monotonic()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            pending.pop(ref)
            try:
                _native.write_result(out, ray.get(ref))
            except Exception as e:  # a worker that died, a model that did not load
                # The other results are still written; the failed jobs stay pending.
                failed.append(e)
                continue
            done += 1
            secs = time.monotonic() - start
            print(f"sweep on ray: {done}/{len(jobs)} jobs · {secs:.0f} s", file=sys.stderr)
    summary = json.loads(_native.finish(plan, out))
    if failed:
        raise _native.StraitError(
            f"{len(failed)} of {len(jobs)} jobs failed on Ray (the others are written; run the "
            f"sweep again to retry them); the first: {failed[0]}")
    return summary

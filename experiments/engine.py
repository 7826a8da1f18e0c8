"""Run trials on Ray Tune (an embedded local Ray by default, a cluster with ``address``), or on
plain local processes (`run_processes`: where Ray is not installed, e.g. a lent GPU machine).

Ray is the optional ``sweep`` extra (``pip install edge-rnn-zoo[sweep]``); it is imported here
only, and only when a sweep runs, so the zoo imports without it. Tune does the scheduling
(resources per trial, CPU or GPU, concurrency, retries); the *resumability* is the run
directory's (`zoo.experiments.trials`), so Tune's own experiment state is not needed to resume: a
sweep started again skips its finished trials and hands the rest to Tune afresh.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import traceback
from pathlib import Path

from zoo.experiments.trials import Trial
from zoo.core import logs

EXTRA = "pip install 'edge-rnn-zoo[sweep]'"
# Ray's own chatter off unless the user set these (usage-stats prompt, per-trial loggers).
QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "1",
             "RAY_AIR_NEW_OUTPUT": "0", "RAY_DEDUP_LOGS": "0"}
_log = logging.getLogger(__name__)


def require_ray():
    """``ray.tune``, or SystemExit naming the extra that installs it."""
    try:
        from ray import tune
    except ImportError as err:
        raise SystemExit(f"zoo sweep needs Ray Tune, which is not installed ({err}); install the "
                         f"sweep extra: {EXTRA}") from None
    return tune


def thread_env(threads: int, backend: str) -> dict[str, str]:
    """Environment that limits one trial to ``threads`` CPU threads (TensorFlow reads
    TF_NUM_*_THREADS, XLA its flags), so trials sharing a machine do not oversubscribe it."""
    env = {"TF_NUM_INTRAOP_THREADS": str(threads), "TF_NUM_INTEROP_THREADS": "1",
           "OMP_NUM_THREADS": str(threads), "KERAS_BACKEND": backend,
           "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3")}
    if backend == "jax" and threads == 1:
        env["XLA_FLAGS"] = ("--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1 "
                            + os.environ.get("XLA_FLAGS", "")).strip()
    return env


def log_path(trial: Trial) -> Path:
    """A trial's log, beside its run directory (Ray keeps worker output in its temp folder,
    which goes with the session): the epochs, and the traceback of a failure."""
    run_dir = Path(trial.run_dir)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    return run_dir.with_name(run_dir.name + ".log")


def run_trial(params: dict, trials: list[Trial]) -> None:
    """Tune's trainable: train (or resume, or reuse) one trial's run directory, then report its
    summary. Runs in a Ray worker process."""
    from ray import tune

    from zoo.experiments.trials import record_result, summarise
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    trial = trials[params["index"]]
    with open(log_path(trial), "a") as log, logs.written_to(log), logs.written_to(sys.stdout):
        try:
            train_or_reuse(TrainConfig.from_dict(trial.config), trial.run_dir,
                           data_dir=trial.data_dir)
        except BaseException:
            traceback.print_exc(file=log)
            raise
    summary = summarise(trial.run_dir)
    record_result(trial)
    tune.report({k: v for k, v in summary.items() if isinstance(v, (int, float))})


def _progress_callback(tune, trials: list[Trial]):
    """One line per trial that ends (Tune's own progress table is off)."""
    started = time.monotonic()

    class Progress(tune.Callback):
        done = 0

        def _line(self, trial, what):
            spec = trials[trial.config["index"]]
            Progress.done += 1
            _log.info(f"[{Progress.done}/{len(trials)} {time.monotonic() - started:.0f}s] "
                      f"{what}: {spec.name} -> {spec.run_dir}")

        def on_trial_complete(self, **info):
            self._line(info["trial"], "done")

        def on_trial_error(self, **info):
            self._line(info["trial"], "FAILED (its log: the run directory's name + .log)")

    return Progress()


def run(trials: list[Trial], *, out, address: str | None = None, num_cpus: int | None = None,
        num_gpus: int | None = None, cpus_per_trial: float = 1, gpus_per_trial: float = 0,
        max_concurrent: int | None = None, retries: int = 0,
        backend: str = "tensorflow") -> list[str]:
    """Run ``trials`` as Tune trials; the run directories of those that failed are returned.

    ``address`` None starts an embedded local Ray (a new one, never someone else's: address
    "local") with ``num_cpus`` / ``num_gpus`` (default: what Ray detects); otherwise joins that
    cluster (``auto`` or ``HOST:PORT``). Each trial reserves ``cpus_per_trial`` CPUs and
    ``gpus_per_trial`` GPUs (fractions share a GPU) and trains with that many threads.
    """
    for key, value in QUIET_ENV.items():
        os.environ.setdefault(key, value)
    tune = require_ray()
    import ray

    threads = max(1, int(cpus_per_trial))
    env = {"env_vars": thread_env(threads, backend)}
    repo = str(Path(__file__).resolve().parents[1])
    if address is None:
        # Local workers: the checkout on the path, whether or not the zoo is installed.
        env["env_vars"]["PYTHONPATH"] = os.pathsep.join(
            p for p in (repo, os.environ.get("PYTHONPATH")) if p)
    else:
        env["working_dir"] = repo  # a cluster's workers get the code shipped with the job
        env["excludes"] = ["bench", "runs", "exports", ".venv", ".git", "*.tflite", "*.keras"]
    ray.init(address=address or "local", num_cpus=num_cpus, num_gpus=num_gpus,
             include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
             runtime_env=env)
    try:
        trainable = tune.with_resources(tune.with_parameters(run_trial, trials=trials),
                                        {"cpu": cpus_per_trial, "gpu": gpus_per_trial})
        tuner = tune.Tuner(
            trainable,
            param_space={"index": tune.grid_search(list(range(len(trials))))},
            tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent,
                                        reuse_actors=False),
            run_config=tune.RunConfig(
                name=time.strftime("sweep-%Y%m%d-%H%M%S"),
                storage_path=str(Path(out, "_tune").resolve()), verbose=0, log_to_file=True,
                failure_config=tune.FailureConfig(max_failures=retries),
                callbacks=[_progress_callback(tune, trials)]))
        results = tuner.fit()
        return [trials[r.config["index"]].run_dir for r in results if r.error is not None]
    finally:
        ray.shutdown()


def _train_in_process(trial: Trial, env: dict) -> None:
    """One trial in a fresh worker process: its thread limits set before Keras loads."""
    os.environ.update(env)
    from zoo.experiments.trials import record_result
    from zoo.training.config import TrainConfig
    from zoo.training.runs import train_or_reuse

    with open(log_path(trial), "a") as log, logs.written_to(log):
        try:
            train_or_reuse(TrainConfig.from_dict(trial.config), trial.run_dir,
                           data_dir=trial.data_dir)
            record_result(trial)
        except BaseException:
            traceback.print_exc(file=log)
            raise


def run_processes(trials: list[Trial], *, max_concurrent: int, threads: int = 1,
                  backend: str = "tensorflow") -> list[str]:
    """Run ``trials`` on ``max_concurrent`` local worker processes (one new process per trial,
    ``threads`` threads each), without Ray; returns the run directories of those that failed.
    A trial that starts from another trial's run (``init_from``) waits until that one is done;
    each trial's output goes to its log beside its run directory."""
    import concurrent.futures
    import multiprocessing

    env = thread_env(threads, backend)
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # several trials share one GPU
    context = multiprocessing.get_context("spawn")
    waiting, running, failed = list(trials), {}, []
    started, done = time.monotonic(), 0
    with concurrent.futures.ProcessPoolExecutor(max_concurrent, mp_context=context,
                                                max_tasks_per_child=1) as pool:
        while waiting or running:
            unfinished = {t.run_dir for t in waiting} | {t.run_dir for t in running.values()}
            for trial in [t for t in waiting if t.settings.init_from not in unfinished]:
                waiting.remove(trial)
                running[pool.submit(_train_in_process, trial, env)] = trial
            if not running:  # what is left waits on a trial that failed
                failed += [t.run_dir for t in waiting]
                break
            finished, _ = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
            for future in finished:
                trial, done = running.pop(future), done + 1
                ok = future.exception() is None
                if not ok:
                    orphans = [t for t in waiting if t.settings.init_from == trial.run_dir]
                    failed += [trial.run_dir] + [t.run_dir for t in orphans]
                    waiting = [t for t in waiting if t not in orphans]
                _log.info(f"[{done}/{len(trials)} {time.monotonic() - started:.0f}s] "
                          f"{'done' if ok else 'FAILED (its log: the run directory + .log)'}: "
                          f"{trial.name}")
    return failed

"""A tiny buffer budget forces spills: every planted event is still in the
archive and the profile, the spills show as BufferFlush events, nothing is
dropped, and the spill files are gone afterwards."""
import os
import subprocess

import otf2
import smtest
from smtest import (LAUNCHER, Trace, callpath, check, check_trace_consistent, clean_env,
                    load_json, measure, program, workdir)

THREADS, ITER = 2, 20000


def test_tiny_budget():
    out, proc = measure([program("many-regions"), str(THREADS), str(ITER)], "spill",
                        env={"SYSMEASURE_BUFFER_SIZE": "64K", "SYSMEASURE_BUFFER_CHUNK_SIZE": "4K"})
    trace = Trace(out)
    visits = check_trace_consistent(trace)
    check(visits.get("iteration") == THREADS * ITER, "iterations: %s" % visits.get("iteration"))
    check(visits.get("step") == 2 * THREADS * ITER, "steps: %s" % visits.get("step"))
    flushes = trace.of_type(otf2.events.BufferFlush)
    # A 64K budget: the threads outrun the writer thread, and each wait for the
    # disk is a BufferFlush event.
    check(len(flushes) > 0, "waits for the disk are visible as BufferFlush events")
    check(all(e.stop_time >= e.time for _, e in flushes), "flush stop >= start")

    meta = load_json(out, "metadata.json")
    b = meta["buffers"]
    check(b["spills"] >= len(flushes), "metadata spills %s >= BufferFlush events %d" % (b["spills"], len(flushes)))
    check(b["dropped_records"] == 0, "nothing dropped")
    check(not os.path.exists(os.path.join(out, ".spill")), "spill files removed after writing")

    profile = load_json(out, "profile.json")
    step = callpath(profile, "iteration", "step")
    if check(step is not None, "iteration > step in profile"):
        check(sum(t["visits"] for t in step["per_thread"]) == 2 * THREADS * ITER, "profile step visits")


# Spilling with the default folder name: the spill claims the folder, and the
# outputs land in that same one folder.
def test_default_folder_name():
    cwd = workdir("spill-default-name")
    p = subprocess.run([LAUNCHER, "--buffer-size=64K", program("many-regions"), "2", "5000"], cwd=cwd,
                       env=clean_env({"SYSMEASURE_BUFFER_CHUNK_SIZE": "4K"}), stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "default-name spill run: %s" % p.stderr)
    folders = os.listdir(cwd)
    check(len(folders) == 1, "one output folder: %s" % folders)
    if folders:
        meta = load_json(os.path.join(cwd, folders[0]), "metadata.json")
        check(meta["buffers"]["spills"] > 0, "it spilled")
        check(os.path.exists(os.path.join(cwd, folders[0], "traces.otf2")), "archive beside the spill")


if __name__ == "__main__":
    smtest.run_cases(globals())

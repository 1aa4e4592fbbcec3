"""sysmeasure-merge on files that are not what their names say, damaged,
or missing (issue 27).  Real jobs leave the files: a 4-rank MPI job that
returns without MPI_Finalize (process files in .ranks, spill files in
.spill), and a process run with --crash-safe and killed with SIGKILL after a
planted number of steps (a crash-safe spill file and a definitions
journal).  Copies of them are then changed as a user's mistake or a failing
disk would, and merged:

- the merged metadata.json has the sampled metrics of every rank (the merge
  used to read them after freeing them);
- two ranks' spill files swapped: each rank's events are read from the file
  whose header names it, with one line each, and every message matches;
- a byte flipped in a sealed crash-safe chunk, and one in the chunk being
  written at the kill: the chunk is refused with one line naming the rank,
  the location and the events lost, exit 1, the rest merged;
- 8 bytes 0xff in the definitions journal: one line, exit 1, the archive
  whole and readable;
- two of four ranks left nothing: one line names them and why; metadata.json
  (missing_ranks, no invented processes) and profile.txt's header say so;
- after a merge that lost nothing, the files it read are gone (--keep
  leaves them)."""
import glob
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

import otf2
from smtest import (BUILD, LAUNCHER, MPIRUN, Trace, check, check_messages, check_trace_consistent,
                    clean_env, finish, load_json, mpi_env, program, workdir)

MERGE = os.path.join(BUILD, "sysmeasure-merge")
GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "5"}
N_RANKS = 4
RING_MESSAGES = 3 * N_RANKS  # mpi-patterns' ring


def merge(folder, *args):
    return subprocess.run([MERGE] + list(args) + [folder], env=clean_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=300)


def copy_of(src, name):
    dst = os.path.join(workdir(name), "out")
    shutil.copytree(src, dst)
    return dst


def lines(text, *words):
    """The lines of text holding every word."""
    return [l for l in text.splitlines() if all(w in l for w in words)]


def step_enters(out):
    with otf2.reader.open(os.path.join(out, "traces.otf2")) as trace:
        return sum(1 for _, e in trace.events
                   if isinstance(e, otf2.events.Enter) and e.region.name == "step")


# ---------------------------------------------------------------- the jobs

def mpi_job():
    """4 ranks, no MPI_Finalize, process sampling on: .ranks and .spill."""
    out = os.path.join(workdir("hostile-mpi"), "out")
    cmd = [MPIRUN, "-np", str(N_RANKS), "--oversubscribe", LAUNCHER, "--output", out,
           "--process-sampling", "--", program("mpi-patterns"), "nofinalize"]
    subprocess.run(cmd, env=clean_env(mpi_env(GRACE)), stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, timeout=300)
    return out


def rank_files(out):
    """{rank: (process file, spill file)} from the process files' heads
    (rank at byte 24, pid at byte 160) and the spill files' names (pid last)."""
    spills = {int(os.path.basename(p).split(".")[-2]): p
              for p in glob.glob(os.path.join(out, ".spill", "*.events"))}
    files = {}
    for p in glob.glob(os.path.join(out, ".ranks", "rank-*.smp")):
        with open(p, "rb") as f:
            head = f.read(168)
        rank = struct.unpack_from("I", head, 24)[0]
        pid = struct.unpack_from("q", head, 160)[0]
        files[rank] = (p, spills.get(pid))
    return files


def crashed_process():
    """A process run with --crash-safe and small chunks, killed with SIGKILL
    once it completed 20000 steps: (folder, steps completed)."""
    folder = workdir("hostile-crash")
    out = os.path.join(folder, "out")
    counter = os.path.join(folder, "counter")
    with open(counter, "wb") as f:
        f.write(b"\0" * 4096)
    env = {"SYSMEASURE_CRASH_SAFE": "yes", "SYSMEASURE_BUFFER_SIZE": "256K",
           "SYSMEASURE_BUFFER_CHUNK_SIZE": "16K"}
    victim = subprocess.Popen([LAUNCHER, "--output", out, "--", program("crash-victim"), counter,
                               "0", "100000000"], env=clean_env(env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    end = time.time() + 60
    pid = done = 0
    while time.time() < end and victim.poll() is None:
        with open(counter, "rb") as f:
            pid, done = struct.unpack("QQ", f.read(16))
        if done >= 20000:
            break
        time.sleep(0.005)
    if pid:
        os.kill(pid, signal.SIGKILL)
    victim.communicate(timeout=60)
    with open(counter, "rb") as f:
        return out, struct.unpack("QQ", f.read(16))[1]


SLOT_MAGIC = 0x544f4c53534d5343
FRAME_MAGIC = 0x46434d53
CHUNK_HEAD = 112  # struct sm_chunk before its records; the frame header at 80


def slots(path):
    """The used slots of a crash-safe spill file: (offset, sealed, records,
    fill) in file order."""
    with open(path, "rb") as f:
        d = f.read()
    head = struct.unpack_from("I", d, 12)[0]  # the file header's own size
    slot_bytes, first = struct.unpack_from("QQ", d, head)
    found = []
    for off in range(first, len(d) - CHUNK_HEAD + 1, slot_bytes):
        magic, base, live_end = struct.unpack_from("QQQ", d, off + 32)
        if magic != SLOT_MAGIC:
            continue
        fmagic, _, _, records = struct.unpack_from("IIII", d, off + 80)
        found.append((off, fmagic == FRAME_MAGIC, records, live_end - base))
    return found


def flip(path, offset, mask=0x10):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ mask]))


# ---------------------------------------------------------------- the cases

def test_merged_metadata_has_every_ranks_metrics(job):
    out = copy_of(job, "hostile-metrics")
    proc = merge(out)
    check(proc.returncode == 0, "metrics: merge exits 0: %s" % proc.stderr)
    meta = load_json(out, "metadata.json")
    ranks = sorted({m["rank"] for m in meta["metrics"]})
    check(ranks == list(range(N_RANKS)), "metrics: every rank's sampled metrics in the merged "
          "metadata.json: ranks %s" % ranks)
    rss = [m for m in meta["metrics"] if m["name"] == "memory resident"]
    check(len(rss) == N_RANKS and all(m["samples"] > 0 and m["max"] > 0 for m in rss),
          "metrics: a resident-memory series per rank: %s" % rss)


def test_swapped_spill_files(job):
    out = copy_of(job, "hostile-swapped")
    files = rank_files(out)
    if not check(len(files) == N_RANKS and files[0][1] and files[1][1],
                 "swapped: a process file and a spill file per rank: %s" % files):
        return
    a, b = files[0][1], files[1][1]
    os.rename(a, a + ".tmp")
    os.rename(b, a)
    os.rename(a + ".tmp", b)
    proc = merge(out)
    check(proc.returncode == 0 and "%d of %d ranks merged" % (N_RANKS, N_RANKS) in proc.stderr,
          "swapped: merged: %d %s" % (proc.returncode, proc.stderr))
    for rank, other in ((0, 1), (1, 0)):
        said = lines(proc.stderr, "holds the events of rank %d" % other,
                     "rank %d's events read from" % rank)
        check(len(said) == 1, "swapped: one line says rank %d's file was found under rank %d's "
              "name: %s" % (rank, other, proc.stderr))
    trace = Trace(out)
    check_trace_consistent(trace)
    check(check_messages(trace, N_RANKS) == RING_MESSAGES,
          "swapped: every rank's events in its own place: the ring's %d messages match"
          % RING_MESSAGES)


def test_flipped_byte_in_sealed_chunk(crashed, completed):
    out = copy_of(crashed, "hostile-sealed")
    events = glob.glob(os.path.join(out, ".spill", "*.events"))[0]
    sealed = [s for s in slots(events) if s[1]]
    if not check(len(sealed) > 4, "sealed: the victim sealed chunks: %d" % len(sealed)):
        return
    off, _, records, _ = sealed[2]
    flip(events, off + CHUNK_HEAD + 16 * 100 + 5)  # a record's time, in the middle
    proc = merge(out)
    check(proc.returncode == 1, "sealed: the damage fails the merge: %d %s"
          % (proc.returncode, proc.stderr))
    said = lines(proc.stderr, "rank 0", "location 0", "%d events lost" % records)
    check(len(said) == 1, "sealed: one line names rank, location and the %d events lost: %s"
          % (records, proc.stderr))
    enters = step_enters(out)
    # The chunk's records are enters and leaves of steps (and a tenth of
    # inner regions): about records / 2.2 steps went with it.
    check(completed - records <= enters <= completed - records / 3,
          "sealed: the other steps merged: %d of %d, the chunk held %d records"
          % (enters, completed, records))
    check(os.path.exists(events), "sealed: the damaged files are kept")


def test_flipped_byte_in_chunk_being_written(crashed, completed):
    out = copy_of(crashed, "hostile-live")
    events = glob.glob(os.path.join(out, ".spill", "*.events"))[0]
    live = [s for s in slots(events) if not s[1]]
    if not check(live and live[-1][3] > 16 * 40, "live: a chunk being written at the kill: %s"
                 % live):
        return
    off, _, _, fill = live[-1]
    flip(events, off + CHUNK_HEAD + 16 * 20 + 5)  # the 21st record's time, 2^44 ticks later
    proc = merge(out)
    check(proc.returncode == 1, "live: the damage fails the merge: %d %s"
          % (proc.returncode, proc.stderr))
    check(len(lines(proc.stderr, "rank 0", "location 0", "being written at the kill",
                    "lost")) == 1,
          "live: one line names the chunk being written and what was lost: %s" % proc.stderr)
    trace = Trace(out)
    check_trace_consistent(trace)
    last = max(e.time for evs in trace.events.values() for e in evs)
    first = min(e.time for evs in trace.events.values() for e in evs)
    check(last - first < 3600 * 10**9, "live: no event moved 2^44 ticks ahead: %d ns" % (last - first))


def test_damaged_journal(crashed, completed):
    out = copy_of(crashed, "hostile-journal")
    journal = glob.glob(os.path.join(out, ".spill", "*.defs"))[0]
    with open(journal, "rb") as f:
        fill = struct.unpack_from("Q", f.read(16), 8)[0]
    at = 512 + (fill // 2) // 8 * 8  # 8 bytes 0xff in the middle of its entries
    with open(journal, "r+b") as f:
        f.seek(at)
        f.write(b"\xff" * 8)
    proc = merge(out)
    check(proc.returncode == 1, "journal: the damage fails the merge: %d %s"
          % (proc.returncode, proc.stderr))
    check(len(lines(proc.stderr, os.path.basename(journal), "damaged")) == 1,
          "journal: one line names the journal and the damage: %s" % proc.stderr)
    p = subprocess.run(["otf2-print", os.path.join(out, "traces.otf2")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "journal: otf2-print reads the archive: %s" % p.stderr[-300:])
    enters = step_enters(out)
    check(0.99 * completed <= enters <= completed + 1,
          "journal: the events are all there (%d steps, %d completed)" % (enters, completed))


def test_partial_merge_names_missing_ranks(job):
    out = copy_of(job, "hostile-partial")
    files = rank_files(out)
    for rank in (1, 3):  # killed without --crash-safe: nothing of them is left
        for p in files.get(rank, ()):
            if p:
                os.remove(p)
    proc = merge(out)
    check(proc.returncode == 0, "partial: merged: %d %s" % (proc.returncode, proc.stderr))
    said = lines(proc.stderr, "2 of the job's 4 ranks", "missing: ranks 1, 3 (no process file")
    check(len(said) == 1, "partial: one line names the missing ranks and why: %s" % proc.stderr)
    meta = load_json(out, "metadata.json")
    check(meta["ranks"] == 4 and meta.get("ranks_merged") == 2,
          "partial: metadata.json: 4 ranks, 2 merged: %s %s" % (meta["ranks"],
                                                                meta.get("ranks_merged")))
    procs = meta["processes"]
    check([p["rank"] for p in procs] == [0, 2] and all(p["pid"] > 0 and p["host"] for p in procs),
          "partial: only the merged ranks as processes, no pid 0 or empty host: %s" % procs)
    missing = meta.get("missing_ranks", [])
    check([m["rank"] for m in missing] == [1, 3] and
          all("no process file" in m["reason"] for m in missing),
          "partial: missing_ranks with the reason: %s" % missing)
    with open(os.path.join(out, "profile.txt")) as f:
        head = f.read(2000)
    check("ranks       : 2 of 4" in head and "missing     : ranks 1, 3 (no process file" in head,
          "partial: profile.txt's header says 2 of 4 and which are missing:\n%s" % head[:800])
    profile = load_json(out, "profile.json")
    check([p["rank"] for p in profile.get("processes", [])] == [0, 2],
          "partial: profile.json lists the merged ranks only: %s" % profile.get("processes"))


def test_merge_removes_what_it_merged(job):
    out = copy_of(job, "hostile-clean")
    kept = copy_of(job, "hostile-keep")
    proc = merge(out)
    check(proc.returncode == 0, "clean: merged: %s" % proc.stderr)
    check(not os.path.exists(os.path.join(out, ".ranks")) and
          not os.path.exists(os.path.join(out, ".spill")),
          "clean: .ranks and .spill gone after the merge: %s" % os.listdir(out))
    check(len(lines(proc.stderr, "ranks merged", "removed from .ranks and .spill")) == 1,
          "clean: the merge says what it removed: %s" % proc.stderr)
    check(os.path.exists(os.path.join(out, "traces.otf2")) and
          os.path.exists(os.path.join(out, "profile.json")), "clean: the outputs are there")
    proc = merge(kept, "--keep")
    check(proc.returncode == 0 and len(glob.glob(os.path.join(kept, ".ranks", "*.smp"))) == N_RANKS
          and len(glob.glob(os.path.join(kept, ".spill", "*.events"))) == N_RANKS,
          "clean: --keep leaves them: %s %s" % (proc.stderr, os.listdir(kept)))


def main():
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        print("built without MPI")
        sys.exit(77)
    job = mpi_job()
    check(len(rank_files(job)) == N_RANKS, "the job left a process file per rank: %s"
          % os.listdir(job))
    crashed, completed = crashed_process()
    check(completed >= 20000 and glob.glob(os.path.join(crashed, ".spill", "*.defs")),
          "the victim was killed after %d steps, leaving its crash-safe files" % completed)
    for case, args in ((test_merged_metadata_has_every_ranks_metrics, (job,)),
                       (test_swapped_spill_files, (job,)),
                       (test_flipped_byte_in_sealed_chunk, (crashed, completed)),
                       (test_flipped_byte_in_chunk_being_written, (crashed, completed)),
                       (test_damaged_journal, (crashed, completed)),
                       (test_partial_merge_names_missing_ranks, (job,)),
                       (test_merge_removes_what_it_merged, (job,))):
        try:
            case(*args)
        except Exception as e:  # the scenario fails; the others still run
            check(False, "%s: %s: %s" % (case.__name__, type(e).__name__, e))
    finish()


main()

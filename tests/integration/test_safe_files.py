"""Nothing clobbered, nothing mixed: a symbolic link (or a hard link, or a
file of another user) planted at an output file or folder is never written
through -- the file it points to stays as it was, one line names what was
skipped, the rest is written and the application's exit code is kept.
sysmeasure-merge tells jobs apart (two crashed jobs in one folder: refused,
the jobs named; --job picks one) and names damaged or truncated process
files with what was lost (exit 1)."""
import glob
import os
import shutil
import subprocess

import smtest
from smtest import (BUILD, Trace, check, check_messages, check_trace_consistent, mpi_measure,
                    program, region_visits_by_rank, run, workdir)

MANY = program("many-regions")
MERGE = os.path.join(BUILD, "sysmeasure-merge")
PRECIOUS = "precious data, not sysmeasure's\n"


def plant(out, names, kind="symlink"):
    """A victim file per name, and a link to it at out/name; returns them."""
    os.makedirs(out, exist_ok=True)
    victims = {}
    vdir = os.path.join(os.path.dirname(out), "victims")
    os.makedirs(vdir, exist_ok=True)
    for name in names:
        victim = os.path.join(vdir, name.strip(".") + ".victim")
        with open(victim, "w") as f:
            f.write(PRECIOUS)
        if kind == "symlink":
            os.symlink(victim, os.path.join(out, name))
        else:
            os.link(victim, os.path.join(out, name))
        victims[name] = victim
    return victims


def untouched(victims, what):
    for name, victim in victims.items():
        with open(victim) as f:
            check(f.read() == PRECIOUS, "%s: the file behind %s is untouched" % (what, name))
        check(os.path.islink(os.path.join(os.path.dirname(os.path.dirname(victim)), "out", name))
              or os.path.isfile(os.path.join(os.path.dirname(os.path.dirname(victim)), "out", name)),
              "%s: %s is left in place" % (what, name))


def skipped_lines(stderr, out, names):
    lines = stderr.splitlines()
    for name in names:
        n = sum(1 for l in lines if os.path.join(out, name) + " not written" in l)
        check(n == 1, "one line for the skipped %s (%d): %s" % (name, n, stderr[-2000:]))


# ---- a process alone: links at the summaries, the rest is written
def test_links_at_summaries():
    out = os.path.join(workdir("links-one"), "out")
    victims = plant(out, ["profile.json", "metadata.json"])
    proc = run([program("exit-code"), "7"], launcher_args=["--output", out])
    check(proc.returncode == 7, "the program's exit code is kept: %d" % proc.returncode)
    untouched(victims, "one process")
    skipped_lines(proc.stderr, out, ["profile.json", "metadata.json"])
    for name in ("profile.txt", "profile.csv", "traces.otf2"):
        check(os.path.isfile(os.path.join(out, name)) and not os.path.islink(os.path.join(out, name)),
              "one process: %s written" % name)


# ---- a hard link to someone's file is not an earlier run's output either
@smtest.fixture
def hardlink_run():
    """A run with a hard link planted at profile.txt: (out, the victims, the process)."""
    out = os.path.join(workdir("hardlink"), "out")
    victims = plant(out, ["profile.txt"], kind="hardlink")
    proc = run([program("exit-code"), "0"], launcher_args=["--output", out])
    return out, victims, proc


def test_hard_link_not_written_through():
    out, victims, proc = hardlink_run()
    check(proc.returncode == 0, "hard link: rc 0")
    untouched(victims, "hard link")
    skipped_lines(proc.stderr, out, ["profile.txt"])


def test_second_run_replaces_own_outputs():
    # ... while the outputs of an earlier run of ours are replaced as before
    out = hardlink_run()[0]
    proc = run([program("exit-code"), "0"], launcher_args=["--output", out])
    check(proc.returncode == 0 and os.path.getsize(os.path.join(out, "profile.json")) > 0 and
          "profile.json not written" not in proc.stderr, "a second run replaces its own outputs: %s"
          % proc.stderr)


def test_link_at_spill():
    # A link at .spill: no spill file goes through it; the profile is whole.
    out = os.path.join(workdir("links-spill"), "out")
    os.makedirs(out)
    vdir = os.path.join(os.path.dirname(out), "victim-folder")
    os.makedirs(vdir)
    with open(os.path.join(vdir, "keep"), "w") as f:
        f.write(PRECIOUS)
    os.symlink(vdir, os.path.join(out, ".spill"))
    proc = run([MANY, "2", "3000"], launcher_args=["--output", out, "--buffer-size", "16K"],
               env={"SYSMEASURE_BUFFER_CHUNK_SIZE": "4K"})
    check(proc.returncode == 0, ".spill link: rc 0: %s" % proc.stderr)
    check(os.listdir(vdir) == ["keep"] and open(os.path.join(vdir, "keep")).read() == PRECIOUS,
          ".spill link: nothing created, changed or removed behind it: %s" % os.listdir(vdir))
    check(os.path.islink(os.path.join(out, ".spill")), ".spill link left in place")
    spill_lines = [l for l in proc.stderr.splitlines() if "spill" in l and "symbolic link" in l]
    check(len(spill_lines) == 1, ".spill link: one line says so: %s" % proc.stderr)
    check(os.path.isfile(os.path.join(out, "profile.txt")), ".spill link: profile.txt written")
    check("dropped_records" in open(os.path.join(out, "metadata.json")).read(),
          ".spill link: metadata.json written, with the count of dropped events")


def test_foreign_users_spill():
    # Another user's .spill folder (needs root to make one).
    if os.geteuid() != 0:
        smtest.skip("needs root to give a folder to another user")
    out = os.path.join(workdir("foreign-spill"), "out")
    os.makedirs(os.path.join(out, ".spill"))
    os.chown(os.path.join(out, ".spill"), 65534, 65534)
    proc = run([MANY, "2", "3000"], launcher_args=["--output", out, "--buffer-size", "16K"],
               env={"SYSMEASURE_BUFFER_CHUNK_SIZE": "4K"})
    check(proc.returncode == 0 and os.listdir(os.path.join(out, ".spill")) == [],
          "another user's .spill: nothing written into it")
    check(sum(1 for l in proc.stderr.splitlines() if "another user" in l) == 1,
          "another user's .spill: one line: %s" % proc.stderr)
    check(os.path.isfile(os.path.join(out, "profile.txt")), "another user's .spill: the rest written")


# ---------------------------------------------------------------- MPI jobs
PROG = program("mpi-patterns")
GRACE = {"OMPI_MCA_odls_base_sigkill_timeout": "5"}


def need_mpi():
    if os.environ.get("SM_HAVE_MPI", "yes") != "yes":
        smtest.skip("built without MPI")


def test_mpi_links_at_summaries():
    # A job: links at every summary and the communication matrix.
    need_mpi()
    out = os.path.join(workdir("links-mpi"), "out")
    names = ["profile.txt", "profile.json", "profile.csv", "metadata.json", "comm_matrix.csv"]
    victims = plant(out, names)
    out, proc = mpi_measure(2, [PROG, "ring"], "links-mpi", out=out)
    untouched(victims, "MPI job")
    skipped_lines(proc.stderr, out, names)
    check(os.path.isfile(os.path.join(out, "comm_matrix.json")), "MPI job: comm_matrix.json written")
    t = Trace(out)
    check(check_messages(t, 2) == 6, "MPI job: the archive is written, 6 messages")


def test_crashed_job_link_at_ranks():
    # A crashed job with a link at .ranks: no process file goes through it.
    need_mpi()
    out = os.path.join(workdir("links-ranks"), "out")
    os.makedirs(out)
    vdir = os.path.join(os.path.dirname(out), "victim-folder")
    os.makedirs(vdir)
    os.symlink(vdir, os.path.join(out, ".ranks"))
    out, proc = mpi_measure(2, [PROG, "nofinalize"], "links-ranks", out=out, expect_rc=None, env=GRACE)
    check(os.listdir(vdir) == [], ".ranks link: nothing written behind it: %s" % os.listdir(vdir))
    n = sum(1 for l in proc.stderr.splitlines() if ".ranks is not usable" in l and "symbolic link" in l)
    check(n == 2, ".ranks link: one line per rank (%d): %s" % (n, proc.stderr[-2000:]))


# ---- two crashed jobs in one folder
def job_of(path):
    with open(path, "rb") as f:
        return f.read()[32:160].rstrip(b"\0").decode()


def merge(args):
    return subprocess.run([MERGE] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@smtest.fixture
def first_job():
    """A crashed job (no MPI_Finalize) in a folder: (the folder, the job's
    identity, a copy of the folder with that job alone, for the damage
    cases)."""
    need_mpi()
    mixed = os.path.join(workdir("mixed"), "out")
    mpi_measure(2, [PROG, "nofinalize"], "mixed", out=mixed, expect_rc=None, env=GRACE)
    first = sorted(glob.glob(os.path.join(mixed, ".ranks", "*.smp")))
    check(len(first) == 2, "first job: 2 process files: %s" % first)
    job_a = job_of(first[0])
    alone = os.path.join(workdir("alone"), "out")
    shutil.copytree(mixed, alone)  # job A alone, for the damage cases below
    return mixed, job_a, alone


@smtest.fixture
def two_jobs():
    """A second crashed job (MPI_Abort) in the first one's folder: (the
    folder, job A, job B)."""
    mixed, job_a, _ = first_job()
    mpi_measure(2, [PROG, "abort"], "mixed", out=mixed, expect_rc=None, env=GRACE)
    files = sorted(glob.glob(os.path.join(mixed, ".ranks", "*.smp")))
    check(len(files) == 4, "two jobs: 4 process files side by side: %s" % files)
    jobs = {job_of(f) for f in files}
    check(len(jobs) == 2 and job_a in jobs, "two job identities: %s" % jobs)
    job_b = (jobs - {job_a}).pop() if len(jobs) == 2 else ""
    return mixed, job_a, job_b


def test_merge_refuses_mixed_jobs():
    mixed, job_a, job_b = two_jobs()
    proc = merge([mixed])
    check(proc.returncode == 1, "mixed jobs refused: exit %d" % proc.returncode)
    check(job_a in proc.stderr and job_b in proc.stderr and "--job" in proc.stderr,
          "mixed jobs: both named, --job suggested: %s" % proc.stderr)
    check(not os.path.exists(os.path.join(mixed, "traces.otf2")), "mixed jobs: nothing written")


def merge_one_job(job, aborted):
    mixed = two_jobs()[0]
    proc = merge(["--keep", "--job", job, mixed])  # (the folder is merged again after)
    check(proc.returncode == 0 and "2 of 2 ranks merged" in proc.stderr,
          "--job %s: merged: %d %s" % (job, proc.returncode, proc.stderr))
    t = Trace(mixed)
    check_trace_consistent(t)
    check(check_messages(t, 2) == 6, "--job: only that job's 6 messages")
    visits = region_visits_by_rank(t)
    check(("MPI_Abort" in visits) == aborted, "--job: MPI_Abort only in the aborted job: %s" % visits)
    check(aborted or visits.get("MPI_Barrier") == {0: 1, 1: 1},
          "--job: one barrier per rank, not two jobs' worth: %s" % visits.get("MPI_Barrier"))


def test_merge_job_that_crashed():
    merge_one_job(two_jobs()[1], False)


def test_merge_job_that_aborted():
    merge_one_job(two_jobs()[2], True)


def test_merge_no_such_job():
    proc = merge(["--job", "no-such-job", two_jobs()[0]])
    check(proc.returncode == 1 and "no process file of job no-such-job" in proc.stderr,
          "--job of no job there: %s" % proc.stderr)


# ---- damaged and truncated process files, a lost spill file
def damaged_rank(how):
    """Job A alone, rank 1's process file (or a spill file) damaged: the
    merge names what was lost and exits 1, the other rank merged."""
    d = os.path.join(workdir(how), "out")
    shutil.copytree(first_job()[2], d)
    victim = sorted(glob.glob(os.path.join(d, ".ranks", "rank-1.*.smp")))[0]
    data = bytearray(open(victim, "rb").read())
    if how == "damaged":
        data[len(data) // 2] ^= 0x5a
    elif how == "truncated":
        data = data[:len(data) - 100]
    elif how == "cut-head":
        data = data[:40]
    if how == "spill":
        spills = glob.glob(os.path.join(d, ".spill", "*.events"))
        check(len(spills) > 0, "spill: the crashed job left spill files")
        for s in spills[:1]:
            os.remove(s)
    else:
        with open(victim, "wb") as f:
            f.write(data)
    proc = merge([d])
    check(proc.returncode == 1, "%s: exit 1: %d %s" % (how, proc.returncode, proc.stderr))
    if how == "spill":
        check("cannot open spill file" in proc.stderr and "the archive lacks them" in proc.stderr,
              "spill: named: %s" % proc.stderr)
        return
    check(os.path.basename(victim) in proc.stderr, "%s: the file is named: %s" % (how, proc.stderr))
    want = {"damaged": "checksum mismatch", "truncated": "truncated (", "cut-head": "less than its head"}[how]
    check(want in proc.stderr and "lost" in proc.stderr, "%s: says what and what is lost: %s"
          % (how, proc.stderr))
    check("1 of 2 ranks merged" in proc.stderr, "%s: the other rank is merged: %s" % (how, proc.stderr))
    check(sorted(region_visits_by_rank(Trace(d)).get("MPI_Send", {})) == [0],
          "%s: rank 0's events written" % how)


def test_merge_damaged_process_file():
    damaged_rank("damaged")


def test_merge_truncated_process_file():
    damaged_rank("truncated")


def test_merge_process_file_cut_in_its_head():
    damaged_rank("cut-head")


def test_merge_lost_spill_file():
    damaged_rank("spill")


if __name__ == "__main__":
    smtest.run_cases(globals())

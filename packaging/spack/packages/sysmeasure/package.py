# Spack recipe for sysmeasure (doc/manual.md, "Installing at a centre").
# Copyright The sysmeasure developers.  SPDX-License-Identifier: BSD-3-Clause

import os

from spack.package import *


class Sysmeasure(AutotoolsPackage):
    """MPI/OpenMP-aware measurement suite for HPC applications: run a program
    (or each rank of an MPI job) under the sysmeasure launcher and get one
    OTF2 trace archive per job, call-path profiles, metadata.json and a
    self-contained report.html, without recompiling the program."""

    homepage = "https://sysmeasure.invalid/"
    # Releases are the tarballs of `make dist`.  Until they are published
    # with fixed checksums, a centre serves its copy from a Spack mirror
    # (<mirror>/sysmeasure/sysmeasure-<version>.tar.gz) and adds the
    # checksum of that copy here (sha256sum), or installs with
    # `spack install --no-checksum`; the host name above is a placeholder
    # (.invalid), so nothing is ever fetched from it.
    url = "https://sysmeasure.invalid/releases/sysmeasure-0.1.0.tar.gz"

    license("BSD-3-Clause")

    version("0.1.0")

    variant("mpi", default=True, description="MPI adapter (libsysmeasure-mpi.so) and sysmeasure-merge")
    variant("papi", default=True, description="PAPI counters per region and call path (--papi)")
    variant("libunwind", default=True, description="Call-stack sampling (--sampling)")
    variant("elfutils", default=True, description="Source lines of OpenMP constructs (libdw)")
    variant("cuda", default=False, description="NVIDIA GPUs through CUPTI (libsysmeasure-cuda.so)")
    variant("rocm", default=False, description="AMD GPUs: HIP, HSA and rocm-smi libraries")
    variant(
        "kokkos",
        default=False,
        description="Kokkos for the tests of the Kokkos tool library "
        "(the tool library itself needs no Kokkos and is always built)",
    )
    variant("perfetto", default=False, description="Perfetto traces (--perfetto), through protobuf-c")

    depends_on("pkgconfig", type="build")
    depends_on("otf2@2.3:")
    depends_on("mpi", when="+mpi")
    # The MPI wrappers are generated at build time.
    depends_on("python@3:", type="build", when="+mpi")
    depends_on("papi", when="+papi")
    depends_on("libunwind", when="+libunwind")
    depends_on("elfutils", when="+elfutils")
    depends_on("cuda", when="+cuda")
    depends_on("hip", when="+rocm")
    depends_on("hsa-rocr-dev", when="+rocm")
    depends_on("rocm-smi-lib", when="+rocm")
    depends_on("kokkos", type=("build", "link", "test"), when="+kokkos")
    depends_on("protobuf-c", when="+perfetto")

    conflicts("platform=darwin", msg="sysmeasure measures Linux processes (/proc, ELF)")

    def configure_args(self):
        spec = self.spec
        args = ["--with-otf2=" + spec["otf2"].prefix]
        if spec.satisfies("+mpi"):
            args.append("--with-mpi")
            args.append("MPICC=" + spec["mpi"].mpicc)
            if hasattr(spec["mpi"], "mpifc"):
                args.append("MPIFORT=" + spec["mpi"].mpifc)
        else:
            args.append("--without-mpi")
        if spec.satisfies("+papi"):
            args.append("--with-papi=" + spec["papi"].prefix)
        else:
            args.append("--without-papi")
        args.append("--with-libunwind" if spec.satisfies("+libunwind") else "--without-libunwind")
        args.append("--with-libdw" if spec.satisfies("+elfutils") else "--without-libdw")
        if spec.satisfies("+cuda"):
            args.append("--with-cuda=" + spec["cuda"].prefix)
        else:
            args.append("--without-cuda")
        if spec.satisfies("+rocm"):
            args.append("--with-rocm=" + spec["hip"].prefix)
        else:
            args.append("--without-rocm")
        if spec.satisfies("+kokkos"):
            args.append("KOKKOS_CPPFLAGS=-I" + spec["kokkos"].prefix.include)
            args.append("KOKKOS_LIBS=-L{0} -lkokkoscore -ldl".format(spec["kokkos"].prefix.lib))
        else:
            # (not the machine's own Kokkos either)
            args.append("KOKKOS_CPPFLAGS=-I/nonexistent")
            args.append("KOKKOS_LIBS=-lnonexistent")
        args.append("--with-protobuf-c" if spec.satisfies("+perfetto") else "--without-protobuf-c")
        return args

    def setup_run_environment(self, env):
        env.set("SYSMEASURE_ROOT", self.prefix)

    @run_after("install")
    @on_package_attributes(run_tests=True)
    def check_installed_launcher(self):
        """The installed launcher measures a program: one output folder."""
        with working_dir(self.build_directory):
            sysmeasure = Executable(self.prefix.bin.sysmeasure)
            sysmeasure("-o", "spack-check", "/bin/true")
            if not os.path.isfile(join_path("spack-check", "metadata.json")):
                raise InstallError("the installed launcher wrote no metadata.json")

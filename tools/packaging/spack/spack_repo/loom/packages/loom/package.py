# loom's Spack package (docs/install.md, "Spack"); tested by tools/packaging/test-spack.
import json
import os

from spack_repo.builtin.build_systems.cuda import CudaPackage
from spack_repo.builtin.build_systems.meson import MesonPackage

from spack.package import *


class Loom(MesonPackage, CudaPackage):
    """loom: collective algorithms for Open MPI 4.1 and 5.0, a coll component
    (mca_coll_loom.so) that Open MPI loads into every job, with the tools that
    explain, benchmark and tune its choices (loom-rules, loom-bench, loom-tune, ...).

    The plugin is compiled against Open MPI's internal headers, so it fits exactly
    the Open MPI release it was built against, and that Open MPI must have them:
    an installation configured --with-devel-headers, or a distribution's dev
    package (Debian's libopenmpi-dev). `spack load loom` points that Open MPI's
    jobs at the plugin (OMPI_MCA_mca_base_component_path)."""

    license("BSD-3-Clause")

    # No public download: build from a checkout (`spack develop --path CHECKOUT loom@0.2.0`).
    version("0.2.0")

    variant("hwloc", default=True, description="Topology-aware algorithms (hwloc)")
    variant(
        "xpmem",
        default=False,
        description="XPMEM for the single-copy algorithms where /dev/xpmem opens (else CMA)",
    )
    # CUDA (CudaPackage): +cuda builds libloom_cuda.so for the cuda_arch values given.
    conflicts("cuda_arch=none", when="+cuda", msg="loom+cuda needs cuda_arch=NN (e.g. cuda_arch=80)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("meson@1.0:", type="build")
    depends_on("pkgconfig", type="build")
    # The tools (loom-bench-compare, loom-tune, loom-trace) are python3 scripts.
    depends_on("python@3.8:", type=("build", "run"))
    # The glue is written for the 4.1 and 5.0 series (meson setup refuses others).
    depends_on("openmpi@4.1:4.1,5.0:5.0")
    depends_on("hwloc", when="+hwloc")
    depends_on("xpmem", when="+xpmem")

    @property
    def component_dir(self):
        """Where the plugin goes: a directory of loom's own, put on Open MPI's component
        path by `spack load loom` (setup_run_environment)."""
        return join_path(self.prefix.lib, "loom")

    def meson_args(self):
        spec = self.spec
        args = [
            # The Open MPI this spec depends on: its ompi-c.pc, ompi_info and component
            # directory (and, for 5.0, its PMIx), not whichever pkg-config finds first.
            f"-Dompi={spec['openmpi'].prefix}",
            f"-Dcomponent_dir={self.component_dir}",
            "-Dtests=false",
            "-Dhwloc={0}".format("enabled" if spec.satisfies("+hwloc") else "disabled"),
            "-Dxpmem={0}".format("enabled" if spec.satisfies("+xpmem") else "disabled"),
        ]
        if spec.satisfies("+cuda"):
            args += ["-Dcuda=enabled", "-Dgpu_archs={0}".format(",".join(spec.variants["cuda_arch"].value))]
        else:
            args.append("-Dcuda=disabled")
        return args

    @property
    def _run_env_file(self):
        return join_path(self.prefix.share, "loom", "spack-run-env.json")

    @run_after("install")
    def record_component_paths(self):
        """Open MPI's own component directory (and, for Open MPI 5, PMIx's), asked of that
        Open MPI once at install time, for setup_run_environment."""
        ompi_info = Executable(join_path(self.spec["openmpi"].prefix.bin, "ompi_info"))
        out = ompi_info("--parsable", "--path", "pkglibdir", output=str)
        ompi_components = out.strip().split("pkglibdir:", 1)[1].strip()
        record = {"ompi_components": ompi_components, "pmix_components": ""}
        # Open MPI 5's launcher gives every rank a component path of its own unless the
        # environment mpirun starts from names one; PMIx reads the same parameter, so it gets
        # its own directory back. meson install wrote both to openmpi5-env.sh.
        env_sh = join_path(self.prefix.share, "loom", "openmpi5-env.sh")
        if os.path.exists(env_sh):
            with open(env_sh) as f:
                for line in f:
                    if line.startswith("export PMIX_MCA_mca_base_component_path="):
                        record["pmix_components"] = line.split("=", 1)[1].strip()
        with open(self._run_env_file, "w") as f:
            json.dump(record, f, indent=1)

    def setup_run_environment(self, env):
        env.set("LOOM_ROOT", self.prefix)
        if not os.path.exists(self._run_env_file):
            return
        with open(self._run_env_file) as f:
            record = json.load(f)
        # A set mca_base_component_path replaces Open MPI's default list, so Open MPI's own
        # directory comes first and loom's after it (the Lmod module does the same). Set, not
        # prepended: `spack unload` then unsets them, where a path it took loom's entries out of
        # would stay set, empty, and an empty component path leaves Open MPI no components.
        env.set(
            "OMPI_MCA_mca_base_component_path",
            "{0}:{1}".format(record["ompi_components"], self.component_dir),
        )
        if record["pmix_components"]:
            env.set("PMIX_MCA_mca_base_component_path", record["pmix_components"])

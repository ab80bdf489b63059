"""The cluster recipes of docs/cluster.md: launch.sh's arguments, the SLURM script, the Kubernetes
manifests, the page's copies of them, and one real two-"node" run on CPU.

Each launcher is held to what it hands launch.sh: the SLURM script is run with ``SRUN=env`` (the
command runs as srun would start it, with the SLURM variables a node would have) and
``LAUNCH_OPTIONS=--dry-run``; a manifest's container script is run in bash with the variables the
controller would set (JobSet: JOB_COMPLETION_INDEX; PyTorchJob: MASTER_ADDR, MASTER_PORT,
WORLD_SIZE, RANK) and ``--dry-run`` added to each launch.sh call. The real run starts calibrate
on two "nodes" of one process each on this host (gloo, static rendezvous on 127.0.0.1), as the
page's expected output was made.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
LAUNCH = ROOT / "scripts" / "cluster" / "launch.sh"
CLEAN = {
    k: v
    for k, v in os.environ.items()
    if not k.startswith(("PET_", "SLURM_", "MASTER_", "JOB_COMPLETION"))
}


def launch(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(LAUNCH), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**CLEAN, "PYTHON": "py", **env},
    )


def test_one_node_is_standalone_and_arguments_pass_through() -> None:
    done = launch("calibrate", "--nproc-per-node", "4", "--dry-run", "--", "--out", "p.yaml")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "py",
        "-m",
        "torch.distributed.run",
        "--nnodes=1",
        "--nproc-per-node=4",
        "--standalone",
        "-m",
        "commatlas.calibrate",
        "--device",
        "cuda",
        "--out",
        "p.yaml",
    ]


def test_several_nodes_use_static_rendezvous_from_flags_or_environment() -> None:
    flags = launch(
        "selftest",
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--master-addr",
        "node0",
        "--nproc-per-node",
        "8",
        "--dry-run",
    ).stdout.split()
    assert flags[3:8] == [
        "--nnodes=2",
        "--nproc-per-node=8",
        "--node-rank=1",
        "--master-addr=node0",
        "--master-port=29500",
    ]
    kubeflow = launch(
        "check-ddp",
        "--dry-run",
        PET_NNODES="4",
        PET_NODE_RANK="3",
        PET_NPROC_PER_NODE="8",
        PET_MASTER_ADDR="job-node-0-0.job",
        PET_MASTER_PORT="23456",
    ).stdout
    assert (
        "--nnodes=4 --nproc-per-node=8 --node-rank=3 --master-addr=job-node-0-0.job "
        "--master-port=23456 -m commatlas.check_ddp" in kubeflow
    )
    jobset = launch(
        "selftest",
        "--dry-run",
        "--nproc-per-node",
        "1",
        PET_NNODES="2",
        JOB_COMPLETION_INDEX="1",
        MASTER_ADDR="n0",
    ).stdout
    assert "--node-rank=1 --master-addr=n0" in jobset


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give a command"),
        (["train"], "unknown command 'train'"),
        (["selftest", "--nnodes", "two"], "--nnodes must be an integer >= 1, got 'two'"),
        (["selftest", "--nnodes", "2"], "2 nodes need --master-addr"),
        (
            ["selftest", "--nnodes", "2", "--node-rank", "2", "--master-addr", "a"],
            "--node-rank 2 is not below --nnodes 2",
        ),
        (["selftest", "--master-port", "70000"], "--master-port must be at most 65535"),
        (["selftest", "--device", "tpu"], "--device must be cuda or cpu"),
        (["selftest", "--out", "x"], "unknown option '--out' (arguments for selftest go after --)"),
        (["selftest", "--nnodes"], "--nnodes needs a value"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    done = launch(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"launch.sh: {message}\n" or (
        done.stderr.startswith(f"launch.sh: {message}") and done.stderr.count("\n") == 1
    ), done.stderr


def test_slurm_script_runs_the_three_programs_on_every_node() -> None:
    env = {
        **CLEAN,
        "SRUN": "env",
        "LAUNCH_OPTIONS": "--dry-run",
        "PYTHON": "py",
        "SLURM_NNODES": "2",
        "SLURM_NODEID": "1",
        "SLURM_GPUS_ON_NODE": "8",
        "SLURM_JOB_ID": "42",
        "MASTER_ADDR": "gpu001",
        "SLURM_SUBMIT_DIR": str(ROOT),
    }
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "cluster" / "commatlas.sbatch")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    rendezvous = "--nnodes=2 --nproc-per-node=8 --node-rank=1 --master-addr=gpu001 "
    assert len(lines) == 3 and all(rendezvous in line for line in lines)
    assert lines[0].endswith("-m reference_impls.selftest --device cuda")
    assert lines[1].endswith(
        "commatlas.calibrate --device cuda --out profile-42.yaml --name slurm-42"
    )
    assert lines[2].endswith("commatlas.check_ddp --device cuda --profile profile-42.yaml")
    directives = re.findall(
        r"^#SBATCH --(\S+)=(\S+)", (ROOT / "scripts/cluster/commatlas.sbatch").read_text(), re.M
    )
    assert dict(directives)["ntasks-per-node"] == "1"  # one launch.sh per node


def _container_script(manifest: dict) -> tuple[str, dict[str, str]]:
    if manifest["kind"] == "JobSet":
        job = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]
        assert job["completionMode"] == "Indexed" and job["parallelism"] == job["completions"]
        pod = job["template"]["spec"]
    else:
        pod = manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {item["name"]: item["value"] for item in container.get("env", [])}
    return container["args"][0], env


def _dry_run(script: str, env: dict[str, str]) -> list[str]:
    script = re.sub(r"(scripts/cluster/launch\.sh [\w-]+)", r"\1 --dry-run", script)
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**CLEAN, "PYTHON": "py", **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_jobset_pods_find_node_0_and_their_rank() -> None:
    manifest = yaml.safe_load((ROOT / "scripts/cluster/jobset.yaml").read_text())
    script, env = _container_script(manifest)
    job = manifest["spec"]["replicatedJobs"][0]
    assert env["PET_NNODES"] == str(job["template"]["spec"]["parallelism"])
    # JobSet names pods <jobset>-<replicated job>-<job index>-<pod index> under subdomain <jobset>
    name = manifest["metadata"]["name"]
    assert env["PET_MASTER_ADDR"] == f"{name}-{job['name']}-0-0.{name}"
    lines = _dry_run(script, {**env, "JOB_COMPLETION_INDEX": "1"})
    assert len(lines) == 3 and all(
        "--nnodes=2 --nproc-per-node=8 --node-rank=1" in x for x in lines
    )
    assert [line.split(" -m ")[-1].split()[0] for line in lines] == [
        "reference_impls.selftest",
        "commatlas.calibrate",
        "commatlas.check_ddp",
    ]


def test_pytorchjob_pods_use_the_operator_variables() -> None:
    manifest = yaml.safe_load((ROOT / "scripts/cluster/pytorchjob.yaml").read_text())
    replicas = manifest["spec"]["pytorchReplicaSpecs"]
    assert replicas["Master"]["template"] == replicas["Worker"]["template"]  # one pod template
    assert replicas["Master"]["template"]["spec"]["containers"][0]["name"] == "pytorch"
    script, _ = _container_script(manifest)
    pods = replicas["Master"]["replicas"] + replicas["Worker"]["replicas"]
    operator = {
        "MASTER_ADDR": "commatlas-master-0",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": str(pods),
        "RANK": "1",
    }
    lines = _dry_run(script, operator)
    rendezvous = (
        f"--nnodes={pods} --nproc-per-node=8 --node-rank=1 "
        "--master-addr=commatlas-master-0 --master-port=23456"
    )
    assert len(lines) == 3 and all(rendezvous in line for line in lines)


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("scripts/cluster/commatlas.sbatch", "bash"),
        ("scripts/cluster/jobset.yaml", "yaml"),
        ("scripts/cluster/pytorchjob.yaml", "yaml"),
    ],
)
def test_the_docs_page_shows_the_scripts_as_they_are(path: str, language: str) -> None:
    page = (ROOT / "docs" / "cluster.md").read_text()
    text = (ROOT / path).read_text().rstrip("\n")
    assert f"```{language}\n{text}\n```" in page


def test_the_page_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    assert "Running on a real cluster: cluster.md" in nav


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_calibrate_across_two_nodes_on_this_host(tmp_path: Path) -> None:
    """The multi-node recipe for real: two launch.sh, node ranks 0 and 1, gloo on CPU."""
    port, out = str(_free_port()), tmp_path / "profile.yaml"
    common = [
        "calibrate",
        "--device",
        "cpu",
        "--nnodes",
        "2",
        "--nproc-per-node",
        "1",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        port,
        "--",
        "--sizes",
        "1KB",
        "1MB",
        "--collectives",
        "all-reduce",
        "send-recv",
        "--out",
        str(out),
    ]
    env = {**CLEAN, "PYTHON": sys.executable}
    nodes = [
        subprocess.Popen(
            ["bash", str(LAUNCH), *common[:1], "--node-rank", str(rank), *common[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=120)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    assert f"profile written to {out}" in outputs[0] and out.is_file()
    # one node per process: the links fitted are "inter" (what a fit finds depends on the load)
    assert re.search(r"(all-reduce|send-recv)\s+inter\s+alpha", outputs[0]), outputs[0]

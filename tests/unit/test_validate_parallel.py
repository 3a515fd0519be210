"""`validate` on a large repository checks clusters in shares, in worker processes: same answer as one pass."""

from __future__ import annotations

from pathlib import Path

from reconciler.manifests.validate import SHARE, check_repository, load_and_validate
from tests.unit.test_validate import write_repo
from tests.unit.validation_cases import BASE, CASES

CLUSTER = BASE["clusters/c1/cluster.yaml"]


def make_fleet(root: Path, clusters: int) -> None:
    files: dict[str, str] = {}
    bad = [c for c in CASES if list(c.files) == ["clusters/c1/case.yaml"]]
    for i in range(clusters):
        name = f"c{i:03d}"
        files[f"clusters/{name}/cluster.yaml"] = CLUSTER.replace("name: c1", f"name: {name}")
        if i % 7 == 3:  # some clusters carry a bad manifest
            files[f"clusters/{name}/case.yaml"] = bad[i % len(bad)].files["clusters/c1/case.yaml"].replace("#<-", "")
    write_repo(root, files)
    (root / "clusters" / "c1" / "cluster.yaml").unlink()
    (root / "clusters" / "c1" / "listeners.yaml").unlink()
    (root / "clusters" / "c1").rmdir()


def test_parallel_shares_equal_one_pass(tmp_path: Path) -> None:
    clusters = SHARE * 2 + 5
    make_fleet(tmp_path, clusters)
    _, states, expected = load_and_validate(tmp_path)
    assert len(states) == clusters
    assert any(d.severity == "error" for d in expected)
    for jobs in (1, 2):
        count, diags = check_repository(tmp_path, jobs=jobs)
        assert count == clusters
        assert diags == expected, f"jobs={jobs}"


def test_unknown_cluster_is_reported_with_shares(tmp_path: Path) -> None:
    make_fleet(tmp_path, SHARE + 2)
    names = [f"c{i:03d}" for i in range(SHARE + 2)] + ["nope"]
    _, diags = check_repository(tmp_path, names, jobs=2)
    assert any("unknown cluster 'nope'" in d.message for d in diags)


def test_cluster_shares_split_a_large_fleet_and_refuse_what_one_load_would_see_differently(tmp_path: Path) -> None:
    from reconciler.manifests.validate import FANOUT_MIN, cluster_shares

    make_fleet(tmp_path, FANOUT_MIN + 1)  # c000 and c002.. (c001 removed)
    names = sorted(p.name for p in (tmp_path / "clusters").iterdir() if p.is_dir())
    shares = cluster_shares(tmp_path, jobs=2)
    assert shares == [names[0::2], names[1::2]]
    assert cluster_shares(tmp_path, jobs=1) is None  # this process only
    assert cluster_shares(tmp_path, names[:3], jobs=2) is None  # a few clusters: not worth a fork
    assert cluster_shares(tmp_path, [*names, "nope"], jobs=2) is None  # unknown: reported by one load
    (tmp_path / "clusters" / "link").symlink_to(tmp_path / "clusters" / "c000")
    assert cluster_shares(tmp_path, jobs=2) is None  # a linked cluster directory is a repository problem
    (tmp_path / "clusters" / "link").unlink()
    (tmp_path / "clusters" / "empty").mkdir()  # no cluster.yaml: a problem of the repository
    assert cluster_shares(tmp_path, jobs=2) is None
    assert cluster_shares(tmp_path, names, jobs=2) == [names[0::2], names[1::2]]

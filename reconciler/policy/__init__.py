"""The team's own rules (`kind: Policy`), judged over effective values after a change (PURE).

`model`: the policies as loaded (manifests/policy.py builds them); `views`: a cluster as a policy sees it (the
manifests alone, ZooKeeper with a plan applied, or ZooKeeper as it is), from `effective`; `evaluate`: the
violations and their diagnostics; `compare`: what a pull request that edits a policy would newly flag.
"""

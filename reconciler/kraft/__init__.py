"""The KRaft backend: a cluster with spec.kraft read and written through its brokers' Admin API (kafka-python)
into and from the same LiveState and Plan as ZooKeeper mode (`reconciler.backend`). `admin`: the requests;
`read`: live state; `passwords`: what "unchanged" means for values KRaft never returns; `write`: a plan as
validateOnly checks and writes; `backend`: the two joined on one connection."""

import time
from tests.integration.test_reconcile import *  # noqa

def test_peek(fleet, capsys):
    files = {**fleet.cluster("a"), **fleet.cluster("kraft"), **fleet.cluster("invalid")}
    files["clusters/invalid/topics.yaml"] = topics_yaml().replace("retention.ms", "retention.mss")
    commit(fleet.repo, "x", files)
    fleet.client.create(f"{fleet.chroot}/kraft/controller", encode_controller(1, kraft_controller_epoch=5))
    code, summary, err = reconcile(capsys, fleet)
    time.sleep(0.05)
    fleet.client.set(f"{fleet.chroot}/a/config/topics/orders", b'{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact"}}')
    code, summary, err2 = reconcile(capsys, fleet, "--dry-run")
    with capsys.disabled():
        print(err); print(err2); print(json.dumps(summary, indent=1)[:3000])

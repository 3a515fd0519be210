"""Rotating the password encoder secret, said before it happens.

Kafka (DynamicBrokerConfig / PasswordEncoder) decodes a stored password with `password.encoder.secret` and,
failing that, with `password.encoder.old.secret`. A plan that finds passwords stored with
`passwordEncoder.oldSecret` re-encodes them with the new secret. Brokers still running with the old secret as
`password.encoder.secret` then log "could not be decoded, ignoring" and drop those passwords until restarted.
So a rotation plan says what has to be true first, checks what the manifests can tell (the brokers' static
server.properties), is rated disruptive (`risk.ENCODER_ROTATION`), and needs `--allow-secret-rotation` to apply.
"""

from __future__ import annotations

from reconciler.model import DesiredState
from reconciler.plan import Plan

__all__ = ["rotated_passwords", "rotation_warnings"]

SECRET_KEY, OLD_SECRET_KEY = "password.encoder.secret", "password.encoder.old.secret"


def rotated_passwords(plan: Plan) -> list[str]:
    """`brokers/1 listener.name.x.ssl.key.password` for each password the plan re-encodes in a rotation."""
    return [f"{e.ref.display} {c.key}" for e in plan.entities for c in e.changes if c.rotation]


def rotation_warnings(plan: Plan, desired: DesiredState) -> list[str]:
    """One warning per rotated password and one for the cluster: the preconditions, and what the declared
    static server.properties show about them."""
    rotated = rotated_passwords(plan)
    if not rotated:
        return []
    out = [f"{name}: stored with passwordEncoder.oldSecret; re-encoded with the new secret (a rotation)"
           for name in rotated]
    need = (f"encoder secret rotation of {len(rotated)} password(s): before applying, restart every broker with "
            f"the new secret as {SECRET_KEY} and the old one as {OLD_SECRET_KEY}; apply needs "
            "--allow-secret-rotation")
    static = desired.static
    if not static:
        return [*out, need + " (the manifests declare no server.properties to check this against)"]
    missing = sorted(b for b, props in static.items() if OLD_SECRET_KEY not in props or SECRET_KEY not in props)
    if missing:
        return [*out, need + f"; the server.properties declared for broker(s) {', '.join(missing)} do not set both "
                             f"{SECRET_KEY} and {OLD_SECRET_KEY}: those brokers would drop the re-encoded passwords"]
    return [*out, need + f" (the server.properties declared for broker(s) {', '.join(sorted(static))} set both)"]

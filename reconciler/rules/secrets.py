"""Where secrets may appear and in which form (SPEC §2 "Values and secrets", ground truth §2.3–§2.4)."""

from __future__ import annotations

from reconciler.catalog import Catalog
from reconciler.errors import Diagnostic
from reconciler.model import DEFAULT_ENTITY, DesiredState, SecretRef
from reconciler.rules.cluster import MAX_ENCODER_ITERATIONS

GCM_PREFIX = "AES/GCM/"


def sealed_cipher(encoded: str) -> str | None:
    """The cipherAlgorithm field of a Kafka-encoded value (parsed like Kafka: split on commas, last colon)."""
    for item in encoded.split(","):
        key, sep, value = item.strip().rpartition(":")
        if sep and key.strip() == "cipherAlgorithm":
            return value.strip()
    return None


def sealed_field(encoded: str, name: str) -> str | None:
    """A field of a Kafka-encoded value (the last one wins, as in Kafka's HashMap)."""
    found = None
    for item in encoded.split(","):
        key, sep, value = item.strip().rpartition(":")
        if sep and key.strip() == name:
            found = value.strip()
    return found


def sealed_bounds_problem(encoded: str) -> str | None:
    """Why deriving the key of a sealed value must be refused (absurd iterations or key length), or None.

    Kafka's default is 4096 iterations; decoding derives a key with the *stored* count, so a hostile value
    could make every plan spend minutes per password (MAX_ENCODER_ITERATIONS explains the bound)."""
    iterations, key_length = sealed_field(encoded, "iterations"), sealed_field(encoded, "keyLength")
    if iterations is not None and iterations.isdigit() and int(iterations[:12]) > MAX_ENCODER_ITERATIONS:
        return (f"asks for {int(iterations[:12]) if len(iterations) <= 12 else 'more than 10^12'} PBKDF2 "
                f"iterations, over the {MAX_ENCODER_ITERATIONS:,} this tool derives (Kafka's default is 4096)")
    if key_length is not None and key_length not in ("128", "192", "256"):
        return f"has keyLength {key_length[:12]!r}, not an AES key length (128, 192 or 256)"
    return None


def _mode(cipher: str) -> str:
    return "GCM" if cipher.startswith(GCM_PREFIX) else "CBC"


def check_secrets(state: DesiredState, catalog: Catalog) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    encoder = state.cluster.password_encoder
    first_password_source = None
    for ref, entity in state.entities.items():
        for key, value in entity.config.items():
            is_password = ref.entity_type == "brokers" and catalog.is_password(key)
            secret = value.value if isinstance(value.value, SecretRef) else None
            if is_password and secret is None:
                diags.append(Diagnostic(
                    "error",
                    f"'{key}' is a password: write it as {{secret: {{env: NAME}}}}, {{secret: {{file: PATH}}}} or a "
                    "sealed {encoded: ...} from `reconciler seal`; plaintext passwords are never accepted",
                    value.source, key,
                ))
                continue
            if secret is not None and not is_password and value.iterations is None:  # (SCRAM: rules/quotas.py)
                diags.append(Diagnostic(
                    "error",
                    f"'{key}' is not a password config: brokers would use the reference text literally; "
                    "write the value itself",
                    value.source, key,
                ))
                continue
            if not is_password:
                continue
            first_password_source = first_password_source or value.source
            if ref.name == DEFAULT_ENTITY:
                diags.append(Diagnostic(
                    "error",
                    f"password config '{key}' can be defined only per broker, never at brokers/<default> "
                    "(Kafka: 'Password config can be defined only at broker level')",
                    value.source, key,
                ))
            if secret is not None and secret.encoded is not None and (bad := sealed_bounds_problem(secret.encoded)):
                diags.append(Diagnostic("error", f"sealed value of '{key}' on {ref.display} {bad}; re-seal it "
                                        "with `reconciler seal`", value.source, key))
                continue
            if secret is not None and secret.encoded is not None and encoder is not None:
                stored = sealed_cipher(secret.encoded)
                if stored is None:
                    diags.append(Diagnostic(
                        "error", f"sealed value of '{key}' is not a Kafka-encoded password (no cipherAlgorithm); "
                        "produce it with `reconciler seal`", value.source, key))
                elif _mode(stored) != _mode(encoder.cipher_algorithm):
                    diags.append(Diagnostic(
                        "error",
                        f"sealed value of '{key}' was encoded with {stored} but the cluster's passwordEncoder uses "
                        f"{encoder.cipher_algorithm}; brokers cannot decode across CBC and GCM, re-seal it",
                        value.source, key,
                    ))
    if first_password_source is not None and not state.cluster.is_kraft and (encoder is None or encoder.secret is None):
        diags.append(Diagnostic(
            "error",
            "password configs are managed for this cluster, so the Cluster needs spec.passwordEncoder.secret "
            "(the brokers' password.encoder.secret) to encode them as Kafka does",
            state.cluster.source, "passwordEncoder",
        ))
    diags.extend(_static_cipher(state))
    return diags


def _static_cipher(state: DesiredState) -> list[Diagnostic]:
    """The encoder's cipher mode must equal the brokers' (their server.properties, when given)."""
    encoder = state.cluster.password_encoder
    if encoder is None:
        return []
    diags = []
    for broker, props in state.static.items():
        configured = props.get("password.encoder.cipher.algorithm")
        if configured is None or isinstance(configured.value, SecretRef):
            continue
        if _mode(configured.value) != _mode(encoder.cipher_algorithm):
            diags.append(Diagnostic(
                "error",
                f"broker {broker} is configured with password.encoder.cipher.algorithm={configured.value} but the "
                f"Cluster's passwordEncoder.cipherAlgorithm is {encoder.cipher_algorithm}; values encoded in one "
                "mode cannot be decoded in the other",
                configured.source, "password.encoder.cipher.algorithm",
            ))
    return diags

#!/usr/bin/env python3
"""make_certs.py: test PKI for ChatLink's TLS (wss://) tests.

Generates, with the `cryptography` package, into one directory:

    ca.pem, ca.key               the test CA; tests trust ca.pem
    other-ca.pem, other-ca.key   a second, unrelated CA (different name and key)
    valid.pem, valid.key         server cert signed by the test CA;
                                 SAN: DNS:localhost, IP:127.0.0.1, IP:::1
    wronghost.pem, wronghost.key signed by the test CA; SAN only DNS:wrong.example
    expired.pem, expired.key     valid names, signed by the test CA, but
                                 notAfter is in the past (expired 1 day ago)
    unknownca.pem, unknownca.key valid names, signed by other-ca (which tests
                                 do NOT trust)

Every server .pem holds just the leaf certificate (no chain); the issuing CA
is always a self-signed root, so there are no intermediates to send.
Keys are unencrypted PKCS#8 PEM, mode 0600. Keys are ECDSA P-256 by default
(fast to make; OpenSSL 3 handles them fine), or RSA 2048 with --key-type rsa
(--key-type only matters when the set is (re)generated; add --force).

Usage:
    python3 Tests/Fixtures/make_certs.py DIR [--force] [--key-type ec|rsa] [--quiet]
    python3 Tests/Fixtures/make_certs.py --check DIR   # exit 0 if up to date, 1 if not

Idempotent and fast: if DIR already holds a complete, consistent set (every
file present, every leaf issued by the CA that is there now, nothing that
should be valid expiring within 7 days), it does nothing and takes a few
milliseconds. Otherwise it regenerates the whole set. Files are written
atomically (temp file + rename) under an flock on DIR/.lock, so tests running
in parallel may call it at the same time. On success it prints the absolute
path of ca.pem on stdout (unless --quiet) and exits 0.

From Python:
    sys.path.insert(0, "Tests/Fixtures"); import make_certs
    make_certs.ensure("/tmp/certs")  # -> dict kind -> (pem path, key path)

What a verifying client should see (Python's ssl module, trusting only
ca.pem, OpenSSL 3):
    valid      handshake succeeds for localhost, 127.0.0.1 and ::1
    wronghost  "Hostname mismatch, certificate is not valid for 'localhost'."
               verify_code 62 for a name; for 127.0.0.1 / ::1 it is
               "IP address mismatch, ...", verify_code 64
    expired    "certificate has expired", verify_code 10
    unknownca  "unable to get local issuer certificate", verify_code 20
"""

from __future__ import annotations

import argparse
import datetime as dt
import fcntl
import ipaddress
import os
import sys
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LEAF_KINDS = ("valid", "wronghost", "expired", "unknownca")
CA_DAYS = 3650
LEAF_DAYS = 825
MIN_REMAINING = dt.timedelta(days=7)

GOOD_SAN = [
    x509.DNSName("localhost"),
    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    x509.IPAddress(ipaddress.ip_address("::1")),
]
WRONG_SAN = [x509.DNSName("wrong.example")]


def _now() -> dt.datetime:
    # Whole seconds: certificates store times at second resolution.
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)


def _new_key(key_type: str):
    if key_type == "rsa":
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ChatLink tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _make_ca(cn: str, key_type: str):
    key = _new_key(key_type)
    now = _now()
    name = _name(cn)
    ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _make_leaf(cn, sans, ca_cert, ca_key, key_type, not_before, not_after):
    key = _new_key(key_type)
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=(key_type == "rsa"),
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return cert, key


def _pem_cert(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _pem_key(key) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def paths(directory) -> dict[str, tuple[Path, Path]]:
    """kind -> (pem, key) for every file this script makes, CAs included."""
    d = Path(directory).resolve()
    kinds = ("ca", "other-ca") + LEAF_KINDS
    return {k: (d / f"{k}.pem", d / f"{k}.key") for k in kinds}


def _load(path: Path):
    return x509.load_pem_x509_certificate(path.read_bytes())


def is_current(directory) -> bool:
    """True if the directory holds a complete, consistent, non-expiring set."""
    p = paths(directory)
    try:
        if not all(pem.is_file() and key.is_file() for pem, key in p.values()):
            return False
        now = _now()
        ca, other = _load(p["ca"][0]), _load(p["other-ca"][0])
        for cert in (ca, other):
            if cert.not_valid_after_utc - now < MIN_REMAINING:
                return False
        for kind in LEAF_KINDS:
            leaf = _load(p[kind][0])
            issuer = other if kind == "unknownca" else ca
            leaf.verify_directly_issued_by(issuer)
            if kind == "expired":
                if leaf.not_valid_after_utc >= now:
                    return False
            elif leaf.not_valid_after_utc - now < MIN_REMAINING:
                return False
        return True
    except Exception:
        return False


def _generate(directory: Path, key_type: str) -> None:
    p = paths(directory)
    now = _now()
    ca_cert, ca_key = _make_ca("ChatLink Test CA", key_type)
    other_cert, other_key = _make_ca("ChatLink Unrelated Test CA", key_type)
    good_from, good_to = now - dt.timedelta(days=1), now + dt.timedelta(days=LEAF_DAYS)
    leaves = {
        "valid": _make_leaf("localhost", GOOD_SAN, ca_cert, ca_key, key_type, good_from, good_to),
        "wronghost": _make_leaf(
            "wrong.example", WRONG_SAN, ca_cert, ca_key, key_type, good_from, good_to
        ),
        "expired": _make_leaf(
            "localhost", GOOD_SAN, ca_cert, ca_key, key_type,
            now - dt.timedelta(days=30), now - dt.timedelta(days=1),
        ),
        "unknownca": _make_leaf(
            "localhost", GOOD_SAN, other_cert, other_key, key_type, good_from, good_to
        ),
    }
    # Leaves first, CA last: a reader that checks is_current() never sees a
    # new ca.pem next to old leaves as "current".
    for kind, (cert, key) in leaves.items():
        _write_atomic(p[kind][1], _pem_key(key), 0o600)
        _write_atomic(p[kind][0], _pem_cert(cert), 0o644)
    _write_atomic(p["other-ca"][1], _pem_key(other_key), 0o600)
    _write_atomic(p["other-ca"][0], _pem_cert(other_cert), 0o644)
    _write_atomic(p["ca"][1], _pem_key(ca_key), 0o600)
    _write_atomic(p["ca"][0], _pem_cert(ca_cert), 0o644)


def ensure(directory, force: bool = False, key_type: str = "ec") -> dict[str, tuple[Path, Path]]:
    """Make sure `directory` holds a current set; return paths()."""
    d = Path(directory).resolve()
    d.mkdir(parents=True, exist_ok=True)
    if not force and is_current(d):
        return paths(d)
    with open(d / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if force or not is_current(d):
                _generate(d, key_type)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return paths(d)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Generate ChatLink's test CA and server certificates (idempotent)."
    )
    ap.add_argument("directory", help="output directory (created if missing)")
    ap.add_argument("--force", action="store_true", help="regenerate even if current")
    ap.add_argument("--key-type", choices=("ec", "rsa"), default="ec",
                    help="ec = ECDSA P-256 (default), rsa = RSA 2048")
    ap.add_argument("--check", action="store_true",
                    help="only check: exit 0 if the set is current, 1 if not")
    ap.add_argument("--quiet", action="store_true", help="print nothing on success")
    args = ap.parse_args(argv)
    if args.check:
        return 0 if is_current(args.directory) else 1
    p = ensure(args.directory, force=args.force, key_type=args.key_type)
    if not args.quiet:
        print(p["ca"][0])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A labelled set for secret redaction: secrets as they turn up in agents' sessions, and public look-alikes.

Each secret is a text with the value that must not survive redaction; each public sample is a text
that must come out unchanged. The contexts are written by hand from real formats (env files, shell
history, CI logs, config files, lock files, key files); the random parts of keys are drawn from a
seeded generator so that the set is the same on every run and holds no real credential. Public keys,
certificates and images are built with ``cryptography`` and real file headers from fixed seeds.

``tests/test_redact.py`` asserts on every sample and ``bench/redact_bench.py`` prints the two rates.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import random
import string
import struct
import zlib
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.x509.oid import NameOID

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
BASE64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
BCRYPT = "./" + ALNUM


@dataclass(frozen=True)
class Sample:
    """One labelled text: its name, the text, and for a secret the value that must not survive."""

    name: str
    text: str
    secret: str = ""


def fake(seed: str, alphabet: str, length: int) -> str:
    """A random string that is the same on every run."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(length))


def fake_bytes(seed: str, length: int) -> bytes:
    return random.Random(seed).randbytes(length)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def wrapped(text: str, width: int = 64) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


# -- keys and files built from fixed seeds ----------------------------------------------------------

_ED25519 = ed25519.Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"labelled ed25519").digest())
_EC = ec.derive_private_key(
    int.from_bytes(hashlib.sha256(b"labelled p256").digest(), "big") >> 8, ec.SECP256R1()
)
# An RSA public key needs only a modulus to be written out; this one is a fixed odd 2048-bit number.
_RSA_PUBLIC = rsa.RSAPublicNumbers(
    65537, int.from_bytes(fake_bytes("rsa-n", 256), "big") | (1 << 2047) | 1
).public_key()


def _certificate() -> str:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "build.acme.internal")])
    start = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(_ED25519.public_key())
        .serial_number(0x3F9C2A7D1E8B)
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=365))
        .sign(_ED25519, None)
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii").strip()


def _csr() -> str:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "api.acme.example")])
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(_ED25519, None)
    return csr.public_bytes(serialization.Encoding.PEM).decode("ascii").strip()


def _public_pem(key: object) -> str:
    return (
        key.public_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        .decode("ascii")
        .strip()
    )


def _openssh_public(key: object) -> str:
    return key.public_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    ).decode("ascii")


def _private_pem(key: object, fmt: serialization.PrivateFormat) -> str:
    return (
        key.private_bytes(  # type: ignore[attr-defined]
            serialization.Encoding.PEM, fmt, serialization.NoEncryption()
        )
        .decode("ascii")
        .strip()
    )


def _png(seed: str, size: int = 180) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 16, 16, 8, 6, 0, 0, 0)
    pixels = zlib.compress(fake_bytes(seed, size))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _jpeg(seed: str) -> bytes:
    return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + fake_bytes(seed, 160)


def _gif(seed: str) -> bytes:
    return b"GIF89a\x10\x00\x10\x00\x80\x00\x00" + fake_bytes(seed, 90)


def _woff2(seed: str) -> bytes:
    return b"wOF2\x00\x01\x00\x00" + fake_bytes(seed, 120)


CERT = _certificate()
CSR = _csr()
ED25519_PUBLIC_PEM = _public_pem(_ED25519.public_key())
EC_PUBLIC_PEM = _public_pem(_EC.public_key())
RSA_PUBLIC_PEM = _public_pem(_RSA_PUBLIC)
RSA_PKCS1_PUBLIC = (
    _RSA_PUBLIC.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.PKCS1).decode().strip()
)
SSH_ED25519 = _openssh_public(_ED25519.public_key())
SSH_RSA = _openssh_public(_RSA_PUBLIC)
SSH_ECDSA = _openssh_public(_EC.public_key())
ED25519_PRIVATE = _private_pem(_ED25519, serialization.PrivateFormat.PKCS8)
EC_PRIVATE = _private_pem(_EC, serialization.PrivateFormat.TraditionalOpenSSL)
OPENSSH_PRIVATE = _private_pem(_ED25519, serialization.PrivateFormat.OpenSSH)


def _body(pem: str) -> str:
    """The base64 lines of a PEM block, as one string: what must not survive."""
    return "".join(line for line in pem.splitlines() if not line.startswith("-----"))


def _jwt(claims: dict[str, object], seed: str) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    return f"{header}.{payload}.{fake(seed, URLSAFE, 43)}"


# -- secrets ----------------------------------------------------------------------------------------

_AKIA = "AKIA" + fake("akia-1", UPPER_DIGITS, 16)
_AWS_SECRET = fake("aws-secret-1", BASE64, 40)
_GCP_KEY = ED25519_PRIVATE.replace("\n", "\\n")

SECRETS: list[Sample] = [
    Sample("aws key id in .env", f"AWS_ACCESS_KEY_ID={_AKIA}\nAWS_DEFAULT_REGION=eu-central-1\n", _AKIA),
    Sample(
        "aws credentials file",
        f"[profile deploy]\naws_access_key_id = {_AKIA}\naws_secret_access_key = {_AWS_SECRET}\n",
        _AWS_SECRET,
    ),
    Sample(
        "sts assume-role output",
        '{\n    "Credentials": {\n        "AccessKeyId": "ASIA' + fake("asia", UPPER_DIGITS, 16) + '",\n'
        f'        "SecretAccessKey": "{fake("sts-secret", BASE64, 40)}",\n'
        '        "Expiration": "2025-03-04T11:00:00+00:00"\n    }\n}',
        fake("sts-secret", BASE64, 40),
    ),
    Sample(
        "aws secret exported in a shell",
        f"$ export AWS_SECRET_ACCESS_KEY='{fake('aws-sh', BASE64, 40)}'\n$ aws s3 ls",
        fake("aws-sh", BASE64, 40),
    ),
    Sample(
        "github classic token in git remote",
        f"origin\thttps://ghp_{fake('ghp-remote', ALNUM, 36)}@github.com/acme/api.git (fetch)",
        "ghp_" + fake("ghp-remote", ALNUM, 36),
    ),
    Sample(
        "github fine-grained token in gh auth",
        f"echo github_pat_11A{fake('pat-a', UPPER_DIGITS, 19)}_{fake('pat-b', ALNUM, 59)} | gh auth login --with-token",
        f"github_pat_11A{fake('pat-a', UPPER_DIGITS, 19)}_{fake('pat-b', ALNUM, 59)}",
    ),
    Sample(
        "github actions token in a log",
        f"##[debug]Evaluating: secrets.GITHUB_TOKEN => ghs_{fake('ghs-log', ALNUM, 36)}",
        "ghs_" + fake("ghs-log", ALNUM, 36),
    ),
    Sample(
        "gitlab token in .gitlab-ci",
        f"variables:\n  GITLAB_API: glpat-{fake('glpat-ci', URLSAFE, 20)}\n",
        "glpat-" + fake("glpat-ci", URLSAFE, 20),
    ),
    Sample(
        "slack bot token in python",
        f'client = WebClient(token="xoxb-{fake("xb1", string.digits, 13)}-{fake("xb2", string.digits, 13)}'
        f'-{fake("xb3", ALNUM, 24)}")',
        f"xoxb-{fake('xb1', string.digits, 13)}-{fake('xb2', string.digits, 13)}-{fake('xb3', ALNUM, 24)}",
    ),
    Sample(
        "slack webhook in a curl",
        f'curl -X POST -d \'{{"text":"deploy done"}}\' https://hooks.slack.com/services/T0{fake("wt", UPPER_DIGITS, 8)}'
        f"/B0{fake('wb', UPPER_DIGITS, 9)}/{fake('ww', ALNUM, 24)}",
        fake("ww", ALNUM, 24),
    ),
    Sample(
        "stripe live key in settings.py",
        f"STRIPE_SECRET_KEY = 'sk_live_51{fake('stripe-live', ALNUM, 96)}'",
        "sk_live_51" + fake("stripe-live", ALNUM, 96),
    ),
    Sample(
        "stripe webhook secret",
        f"stripe listen --forward-to localhost:4242/webhook\n> Ready! Your webhook signing secret is whsec_{fake('whsec', ALNUM, 32)}",
        "whsec_" + fake("whsec", ALNUM, 32),
    ),
    Sample(
        "openai project key in a notebook",
        f'os.environ["OPENAI_API_KEY"] = "sk-proj-{fake("proj-nb", URLSAFE, 132)}"',
        "sk-proj-" + fake("proj-nb", URLSAFE, 132),
    ),
    Sample(
        "anthropic key in a shell rc",
        f"export ANTHROPIC_API_KEY=sk-ant-api03-{fake('ant-rc', URLSAFE, 93)}AA",
        f"sk-ant-api03-{fake('ant-rc', URLSAFE, 93)}AA",
    ),
    Sample(
        "google maps key in html",
        f'<script src="https://maps.googleapis.com/maps/api/js?key=AIzaSy{fake("maps", URLSAFE, 33)}&callback=initMap">',
        "AIzaSy" + fake("maps", URLSAFE, 33),
    ),
    Sample(
        "gcp service account json",
        '{\n  "type": "service_account",\n  "project_id": "acme-prod",\n'
        f'  "private_key_id": "{fake("gcp-kid", HEX, 40)}",\n  "private_key": "{_GCP_KEY}\\n",\n'
        '  "client_email": "deploy@acme-prod.iam.gserviceaccount.com"\n}',
        _body(ED25519_PRIVATE),
    ),
    Sample(
        "jwt in a cookie header",
        "Cookie: theme=dark; session=" + _jwt({"sub": "u_1842", "role": "admin", "exp": 1741086000}, "jwt-c"),
        _jwt({"sub": "u_1842", "role": "admin", "exp": 1741086000}, "jwt-c"),
    ),
    Sample(
        "opaque bearer token in httpie",
        f"http GET https://api.acme.example/v2/orders 'Authorization: Bearer {fake('opaque', ALNUM + '._-', 48)}'",
        fake("opaque", ALNUM + "._-", 48),
    ),
    Sample(
        "basic auth in a request dump",
        "GET /metrics HTTP/1.1\nHost: prometheus.internal\nAuthorization: Basic "
        + b64(b"scraper:Qz8!vLp2#rT")
        + "\n",
        b64(b"scraper:Qz8!vLp2#rT"),
    ),
    Sample("ed25519 private key", f"cat ~/.ssh/deploy_key\n{OPENSSH_PRIVATE}\n", _body(OPENSSH_PRIVATE)),
    Sample("ec private key", f"server.key:\n{EC_PRIVATE}", _body(EC_PRIVATE)),
    Sample(
        "pkcs8 private key in yaml",
        "tls:\n  key: |\n    " + ED25519_PRIVATE.replace("\n", "\n    "),
        _body(ED25519_PRIVATE),
    ),
    Sample(
        "pgp private key block",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
        + wrapped(b64(fake_bytes("pgp-priv", 300)))
        + "\n=Xb3f\n-----END PGP PRIVATE KEY BLOCK-----",
        b64(fake_bytes("pgp-priv", 300))[:64],
    ),
    Sample(
        "kubeconfig client key data",
        "users:\n- name: admin\n  user:\n    client-certificate-data: "
        + b64(CERT.encode())
        + "\n    client-key-data: "
        + b64(EC_PRIVATE.encode())
        + "\n",
        b64(EC_PRIVATE.encode())[44:],  # its first characters encode the header, as the certificate's do
    ),
    Sample(
        "postgres url with password",
        f"DATABASE_URL=postgresql://app_user:{fake('pg', ALNUM, 18)}@db.prod.internal:5432/orders?sslmode=require",
        fake("pg", ALNUM, 18),
    ),
    Sample(
        "mongodb srv url",
        f'mongoose.connect("mongodb+srv://analytics:{fake("mongo", ALNUM, 16)}@cluster0.ab1cd.mongodb.net/events")',
        fake("mongo", ALNUM, 16),
    ),
    Sample(
        "redis url with only a password",
        f"CELERY_BROKER_URL=redis://:{fake('redis', ALNUM, 24)}@cache.internal:6379/0",
        fake("redis", ALNUM, 24),
    ),
    Sample(
        "amqp url in docker compose",
        f"    environment:\n      - AMQP_URL=amqp://guest:{fake('amqp', ALNUM + '!', 14)}@rabbitmq:5672/",
        fake("amqp", ALNUM + "!", 14),
    ),
    Sample(
        "django secret key",
        f"SECRET_KEY = 'django-insecure-{fake('django', string.ascii_lowercase + string.digits + '!@#$%^&*(-_=+)', 50)}'",
        fake("django", string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50),
    ),
    Sample(
        "db password in .env", "DB_HOST=db.internal\nDB_PASSWORD=Vx9#kq2!Lm7p\nDB_PORT=5432\n", "Vx9#kq2!Lm7p"
    ),
    Sample(
        "password in a json config",
        '{"smtp": {"host": "smtp.mailgun.org", "user": "postmaster@mg.acme.example", "password": "'
        + fake("smtp", ALNUM, 20)
        + '"}}',
        fake("smtp", ALNUM, 20),
    ),
    Sample(
        "client secret in yaml",
        f"oauth:\n  client_id: 7d1e8b4c-6a9f-4e2d-b6a8-c0e2f4a6b8c0\n  client_secret: {fake('oauth-cs', ALNUM + '~_.-', 40)}\n",
        fake("oauth-cs", ALNUM + "~_.-", 40),
    ),
    Sample(
        "api key in a python call",
        f"client = Client(api_key='{fake('apikey-py', HEX, 32)}', region='eu')",
        fake("apikey-py", HEX, 32),
    ),
    Sample(
        "npm token in .npmrc",
        f"//registry.npmjs.org/:_authToken=npm_{fake('npm', ALNUM, 36)}\n",
        "npm_" + fake("npm", ALNUM, 36),
    ),
    Sample(
        "pypi token in .pypirc",
        f"[pypi]\n  username = __token__\n  password = pypi-AgEIcHlwaS5vcmc{fake('pypi', URLSAFE, 150)}\n",
        "pypi-AgEIcHlwaS5vcmc" + fake("pypi", URLSAFE, 150),
    ),
    Sample(
        "docker config auths",
        '{\n\t"auths": {\n\t\t"registry.acme.example": {\n\t\t\t"auth": "'
        + b64(b"ci-bot:" + fake("docker", ALNUM, 20).encode())
        + '"\n\t\t}\n\t}\n}',
        b64(b"ci-bot:" + fake("docker", ALNUM, 20).encode()),
    ),
    Sample(
        "kubernetes dockerconfigjson secret",
        "apiVersion: v1\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: "
        + b64(
            json.dumps(
                {"auths": {"ghcr.io": {"username": "bot", "password": fake("ghcr", ALNUM, 24)}}}
            ).encode()
        ),
        b64(
            json.dumps(
                {"auths": {"ghcr.io": {"username": "bot", "password": fake("ghcr", ALNUM, 24)}}}
            ).encode()
        ),
    ),
    Sample(
        "mysql client -p",
        f"$ mysql -h db.internal -u root -p{fake('mysql', ALNUM, 14)} orders",
        fake("mysql", ALNUM, 14),
    ),
    Sample(
        "mysqldump -p in cron",
        "0 3 * * * mysqldump --single-transaction -uBackup -pS3cure!Backup2024 shop | gzip > /backup/shop.sql.gz",
        "S3cure!Backup2024",
    ),
    Sample("mysql -p quoted", "mysql -u admin -p'Tr0ub4dor&3' -e 'SHOW DATABASES;'", "Tr0ub4dor&3"),
    Sample("mysql --password", "mariadb --user=app --password=correcthorse staging", "correcthorse"),
    Sample(
        "sshpass -p",
        "sshpass -p 'Wint3r!s-C0ming' ssh deploy@10.0.4.12 'sudo systemctl restart api'",
        "Wint3r!s-C0ming",
    ),
    Sample(
        "redis-cli -a",
        f"redis-cli -h cache.internal -p 6379 -a {fake('redis-a', ALNUM, 22)} INFO keyspace",
        fake("redis-a", ALNUM, 22),
    ),
    Sample(
        "docker login -p",
        f"docker login -u ci-bot -p {fake('dockerp', ALNUM, 20)} registry.acme.example",
        fake("dockerp", ALNUM, 20),
    ),
    Sample(
        "curl -u user:password",
        "curl -u admin:Sup3rS3cret! https://jenkins.internal/api/json",
        "Sup3rS3cret!",
    ),
    Sample(
        "openssl -passin",
        "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:Exp0rtMe!",
        "Exp0rtMe!",
    ),
    Sample(
        "ldapsearch -w",
        "ldapsearch -x -H ldap://ldap.internal -D cn=admin,dc=acme,dc=org -w Ld4pAdm1n! '(uid=ann)'",
        "Ld4pAdm1n!",
    ),
    Sample(
        "pgpassword env",
        "PGPASSWORD=pg-Pr0d-2024 psql -h db.internal -U postgres -c 'select 1'",
        "pg-Pr0d-2024",
    ),
    Sample(
        "sendgrid key",
        f"SENDGRID_API_KEY=SG.{fake('sg1', URLSAFE, 22)}.{fake('sg2', URLSAFE, 43)}",
        f"SG.{fake('sg1', URLSAFE, 22)}.{fake('sg2', URLSAFE, 43)}",
    ),
    Sample(
        "twilio auth token",
        f"TWILIO_ACCOUNT_SID=AC{fake('tw-sid', HEX, 32)}\nTWILIO_AUTH_TOKEN={fake('tw-tok', HEX, 32)}\n",
        fake("tw-tok", HEX, 32),
    ),
    Sample(
        "azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey="
        + b64(fake_bytes("azure", 64))
        + ";EndpointSuffix=core.windows.net",
        b64(fake_bytes("azure", 64)),
    ),
    Sample(
        "azure sas url",
        "https://acmelogs.blob.core.windows.net/exports/q1.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2025-04-01T00:00:00Z&sig="
        + b64(fake_bytes("sas", 32)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
        b64(fake_bytes("sas", 32)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D"),
    ),
    Sample(
        "hugging face token",
        f"huggingface-cli login --token hf_{fake('hf', ALNUM, 34)}",
        "hf_" + fake("hf", ALNUM, 34),
    ),
    Sample(
        "vault token",
        f"export VAULT_ADDR=https://vault.internal:8200\nexport VAULT_TOKEN=hvs.{fake('vault', URLSAFE, 24)}",
        "hvs." + fake("vault", URLSAFE, 24),
    ),
    Sample(
        "digitalocean token",
        f"doctl auth init --access-token dop_v1_{fake('do', HEX, 64)}",
        "dop_v1_" + fake("do", HEX, 64),
    ),
    Sample(
        "shopify admin token",
        f"X-Shopify-Access-Token: shpat_{fake('shpat', HEX, 32)}",
        "shpat_" + fake("shpat", HEX, 32),
    ),
    Sample(
        "discord bot token",
        f"client.run('{b64url(b'918273645546372819')}.{fake('dc2', URLSAFE, 6)}.{fake('dc3', URLSAFE, 38)}')",
        f"{b64url(b'918273645546372819')}.{fake('dc2', URLSAFE, 6)}.{fake('dc3', URLSAFE, 38)}",
    ),
    Sample(
        "telegram bot token",
        f"https://api.telegram.org/bot7123456789:AAH{fake('tg', URLSAFE, 32)}/sendMessage?chat_id=-100200300",
        "AAH" + fake("tg", URLSAFE, 32),
    ),
    Sample(
        "fernet key",
        f"ENCRYPTION_KEY={b64url(fake_bytes('fernet', 32))}=",
        b64url(fake_bytes("fernet", 32)),
    ),
    Sample(
        "random key in prose",
        f"the signing key for staging is {b64(fake_bytes('prose-key', 32))} until we rotate it",
        b64(fake_bytes("prose-key", 32)),
    ),
    Sample(
        "datadog api key",
        f"DD_API_KEY={fake('dd', HEX, 32)} DD_SITE=datadoghq.eu datadog-agent run",
        fake("dd", HEX, 32),
    ),
    Sample(
        "heroku api key",
        "heroku config:set HEROKU_API_KEY=0f3c9a2e-7b1d-4e8f-a6c5-3d2b1e0f9a8c",
        "0f3c9a2e-7b1d-4e8f-a6c5-3d2b1e0f9a8c",
    ),
    Sample(
        "pgpass line",
        f"db.prod.internal:5432:orders:reporting:{fake('pgpass', ALNUM, 20)}",
        fake("pgpass", ALNUM, 20),
    ),
    Sample(
        "netrc with token",
        f"machine api.github.com\n  login ann\n  password gho_{fake('netrc', ALNUM, 36)}\n",
        "gho_" + fake("netrc", ALNUM, 36),
    ),
    Sample(
        "jwt in a json response",
        '{"access_token": "'
        + _jwt({"iss": "https://auth.acme.example", "sub": "42", "scope": "orders:write"}, "jwt-r")
        + '", "token_type": "Bearer", "expires_in": 3600}',
        _jwt({"iss": "https://auth.acme.example", "sub": "42", "scope": "orders:write"}, "jwt-r"),
    ),
]

# -- public look-alikes -------------------------------------------------------------------------------

_SHA = "9b2e4f1a7c3d5e8f0a1b2c3d4e5f60718293a4b5"
_GO_H1 = b64(hashlib.sha256(b"golang.org/x/net v0.23.0").digest())
_GO_MOD_H1 = b64(hashlib.sha256(b"golang.org/x/net v0.23.0/go.mod").digest())
_PNG = b64(_png("png-1"))
_SRI = b64(hashlib.sha384(b"app.js").digest())
_NPM = b64(hashlib.sha512(b"left-pad-1.3.0.tgz").digest())


def _mcf(seed: str) -> str:
    return fake(seed, BCRYPT, 53)


PUBLIC: list[Sample] = [
    Sample("base64 png data uri", f'<img alt="logo" src="data:image/png;base64,{_PNG}">'),
    Sample("raw base64 png in json", json.dumps({"name": "icon.png", "content": _PNG, "encoding": "base64"})),
    Sample("wrapped base64 png", "icon.png (base64):\n" + wrapped(b64(_png("png-2", 400)), 76)),
    Sample(
        "jpeg data uri in css", f".hero {{ background: url(data:image/jpeg;base64,{b64(_jpeg('jpg'))}); }}"
    ),
    Sample("gif data uri in markdown", f"![spinner](data:image/gif;base64,{b64(_gif('gif'))})"),
    Sample(
        "svg data uri",
        "data:image/svg+xml;base64,"
        + b64(
            b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7"/></svg>'
        ),
    ),
    Sample(
        "woff2 font in css",
        f"@font-face {{ font-family: Inter; src: url(data:font/woff2;base64,{b64(_woff2('font'))}); }}",
    ),
    Sample("public certificate", f"Server certificate:\n{CERT}\n"),
    Sample("certificate in a json string", json.dumps({"ca": CERT + "\n", "verify": True})),
    Sample("certificate request", CSR),
    Sample("ed25519 public key pem", ED25519_PUBLIC_PEM),
    Sample("ec public key pem", f"jwt_public_key: |\n  {EC_PUBLIC_PEM.replace(chr(10), chr(10) + '  ')}\n"),
    Sample("rsa public key pem", RSA_PUBLIC_PEM),
    Sample("rsa pkcs1 public key", RSA_PKCS1_PUBLIC),
    Sample(
        "base64 certificate in a kubernetes webhook",
        "  clientConfig:\n    caBundle: " + b64(CERT.encode()) + "\n",
    ),
    Sample("ssh ed25519 public key", SSH_ED25519 + " ann@laptop"),
    Sample("authorized_keys with options", f'from="10.0.0.0/8",no-agent-forwarding {SSH_RSA} deploy@ci'),
    Sample("known_hosts line", f"github.example.com,140.82.121.4 {SSH_ECDSA}"),
    Sample(
        "ssh key in cloud-init",
        f"#cloud-config\nusers:\n  - name: ann\n    ssh_authorized_keys:\n      - {SSH_ED25519} ann@laptop\n",
    ),
    Sample(
        "go.sum lines",
        f"golang.org/x/net v0.23.0 h1:{_GO_H1}\ngolang.org/x/net v0.23.0/go.mod h1:{_GO_MOD_H1}\n",
    ),
    Sample(
        "terraform lock file",
        'provider "registry.terraform.io/hashicorp/aws" {\n  version = "5.40.0"\n  hashes = [\n'
        f'    "h1:{b64(hashlib.sha256(b"aws 5.40.0").digest())}",\n'
        f'    "zh:{hashlib.sha256(b"aws 5.40.0 zip").hexdigest()}",\n  ]\n}}',
    ),
    Sample("bcrypt hash", f"admin:$2b$12${_mcf('bcrypt-1')}"),
    Sample(
        "bcrypt hash in sql",
        f"INSERT INTO users (email, password_hash) VALUES ('ann@example.com', '$2a$10${_mcf('bcrypt-2')}');",
    ),
    Sample(
        "argon2 hash",
        f"$argon2id$v=19$m=65536,t=3,p=4${b64(fake_bytes('argon-salt', 16)).rstrip('=')}${b64(fake_bytes('argon-hash', 32)).rstrip('=')}",
    ),
    Sample(
        "sha512crypt shadow line",
        f"ann:$6$rounds=5000${fake('salt6', BCRYPT, 16)}${fake('hash6', BCRYPT, 86)}:19700:0:99999:7:::",
    ),
    Sample(
        "base64 json pagination cursor",
        "GET /v1/orders?cursor="
        + b64url(
            json.dumps({"after_id": 918273, "created_at": "2025-03-04T10:12:33Z", "limit": 50}).encode()
        ),
    ),
    Sample(
        "base64 json event payload",
        json.dumps(
            {
                "message": {
                    "data": b64(
                        json.dumps(
                            {"bucket": "acme-uploads", "name": "reports/q1.pdf", "size": 48213}
                        ).encode()
                    ),
                    "messageId": "9182736455463728",
                }
            }
        ),
    ),
    Sample(
        "jwt header alone",
        "kid lookup failed for header "
        + b64url(json.dumps({"alg": "RS256", "kid": "2025-03-rotation", "typ": "JWT"}).encode()),
    ),
    Sample(
        "mapbox public token",
        "mapboxgl.accessToken = 'pk."
        + b64url(json.dumps({"u": "acme-maps", "a": "clt" + fake("mb-a", LOWER_DIGITS, 22)}).encode())
        + "."
        + fake("mb-sig", URLSAFE, 22)
        + "';",
    ),
    Sample("stripe publishable key", f"const stripe = Stripe('pk_live_51{fake('pk-live', ALNUM, 96)}');"),
    Sample(
        "git log line",
        f"commit {_SHA}\nAuthor: Ann Example <ann@example.com>\n\n    Fix token refresh race\n",
    ),
    Sample(
        "uuid request id",
        "2025-03-04T10:12:33Z ERROR request_id=7d1e8b4c-6a9f-4e2d-b6a8-c0e2f4a6b8c0 upstream timeout",
    ),
    Sample(
        "docker image digest",
        f"ghcr.io/acme/api@sha256:{hashlib.sha256(b'image').hexdigest()}",
    ),
    Sample(
        "npm integrity",
        json.dumps(
            {
                "version": "1.3.0",
                "resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",
                "integrity": f"sha512-{_NPM}",
            }
        ),
    ),
    Sample(
        "subresource integrity",
        f'<script src="/app.js" integrity="sha384-{_SRI}" crossorigin="anonymous"></script>',
    ),
    Sample("pip hash", f"requests==2.32.3 \\\n    --hash=sha256:{hashlib.sha256(b'requests').hexdigest()}"),
    Sample(
        "wheel RECORD line", f"kernel/redact.py,sha256={b64url(hashlib.sha256(b'redact').digest())},21533"
    ),
    Sample(
        "nix hash",
        f'  src = fetchurl {{ url = "https://example.org/pkg.tar.gz"; hash = "sha256-{_GO_H1}"; }};',
    ),
    Sample(
        "ssh key fingerprint",
        f"256 SHA256:{b64(hashlib.sha256(b'host').digest()).rstrip('=')} root@build (ED25519)",
    ),
    Sample(
        "git lfs pointer",
        f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(b'lfs').hexdigest()}\nsize 1048576\n",
    ),
    Sample(
        "cargo lock checksum",
        f'[[package]]\nname = "serde"\nversion = "1.0.197"\nchecksum = "{hashlib.sha256(b"serde").hexdigest()}"',
    ),
    Sample(
        "gpg fingerprint",
        "pub   ed25519 2024-01-12 [SC]\n      3F9C 2A7D 1E8B 4C6A 9F0E  2D4B 6A8C 0E2F 4A6B 8C0D\nuid   Ann Example <ann@example.com>",
    ),
    Sample("aws arn", "arn:aws:iam::123456789012:role/service-role/AcmeLambdaExecutionRole-eu-central-1"),
    Sample(
        "azure resource id",
        "/subscriptions/0f3c9a2e-7b1d-4e8f-a6c5-3d2b1e0f9a8c/resourceGroups/acme-prod/providers/Microsoft.Web/sites/acme-api",
    ),
    Sample(
        "kubernetes pod names",
        "NAME                        READY   STATUS\napi-7d4b9c8f6d-x2x9k        1/1     Running\nworker-5f6c7d8e9a-q8w7e     1/1     Running",
    ),
    Sample("go pseudo-version", "require golang.org/x/exp v0.0.0-20240318143956-a85f2c67cd81"),
    Sample(
        "webpack assets",
        "static/js/main.3f9c2a7d.js  static/js/vendors~main.8b4c6a9f0e2d.chunk.js  static/css/main.a1b2c3d4.css",
    ),
    Sample(
        "pnpm store path",
        "node_modules/.pnpm/@babel+core@7.24.0_@babel+preset-env@7.24.0/node_modules/@babel/core/lib/index.js",
    ),
    Sample(
        "long java class name",
        "at org.springframework.security.oauth2.server.resource.authentication.JwtAuthenticationProvider.authenticate(JwtAuthenticationProvider.java:97)",
    ),
    Sample(
        "python memory address",
        "<ctx_kernel.kernel.store.sqlite.SqliteStore object at 0x7f3a2b1c4d50> was closed before TokenRefreshScheduler.run",
    ),
    Sample(
        "ulid list",
        "ev_01JNQ8X4ZK3M5P7R9T1V3X5Z7B  pr_01JNQ8X4ZK3M5P7R9T1V3X5Z7C  dc_01JNQ8X4ZK3M5P7R9T1V3X5Z7D",
    ),
    Sample("sentry dsn", f"SENTRY_DSN=https://{fake('sentry', HEX, 32)}@o450123.ingest.sentry.io/5512345"),
    Sample(
        "password placeholder in docs",
        "Set DB_PASSWORD=<your-password> and API_KEY=${API_KEY} in .env (see .env.example).",
    ),
    Sample(
        "password prompt",
        "mysql -u root -p\nEnter password:\nERROR 1045 (28000): Access denied for user 'root'@'localhost'",
    ),
    Sample("mysql port flag", "mysql -h 127.0.0.1 -P 3306 -u app shop < schema.sql"),
    Sample(
        "token prose", "The refresh token expired after 15 minutes; the password reset email was sent twice."
    ),
    Sample(
        "env var references",
        'password = os.environ["DB_PASSWORD"]\ntoken = get_token(scope="read")\nsecret = settings.SECRET_KEY',
    ),
    Sample(
        "semantic versions",
        "Bumped cryptography 42.0.5 -> 44.0.1, pydantic 2.6.4 -> 2.14.3, textual 0.52.1 -> 1.0.0",
    ),
    Sample(
        "markdown table of hashes",
        f"| file | sha256 |\n|---|---|\n| ctx.whl | `{hashlib.sha256(b'whl').hexdigest()}` |",
    ),
    Sample("base64 of text in a test", 'assert encode("hello world") == "aGVsbG8gd29ybGQ="'),
    Sample(
        "youtube playlist id",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&list=PLFgquLnL59alCl_2TQvOiD5Vgm1hCaGSI",
    ),
    Sample("css hex colours", ":root { --brand: #3f9c2a; --accent: #8b4c6a; --bg: #0e2d4b; }"),
]


# Public samples the redactor still replaces, and why: the tests expect these to fail, and the
# benchmark counts them against the public-kept rate.
KNOWN_REDACTED = {
    # 34 random-looking characters with nothing around them that says "public id" (a query
    # parameter's name is no evidence: keys travel as ?key=, ?sig=, ?auth= too).
    "youtube playlist id",
}


def survives(secret: str, redacted: str) -> bool:
    """Tell whether any 12 characters of the secret in a row (or all of a shorter one) are still there."""
    width = min(12, len(secret))
    return any(secret[i : i + width] in redacted for i in range(len(secret) - width + 1))

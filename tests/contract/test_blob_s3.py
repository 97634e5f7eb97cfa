"""S3BlobStore passes the blob contract suite against moto's S3 server, each test in a bucket of
its own (once as it is, once with every blob over 1 KiB sent in parts); then what is its own:
multipart uploads (and that a failed or cancelled one leaves no parts), 50 MB blobs, keys that
keep tenants apart, content checked on reads, and errors translated (a missing bucket,
missing or refused credentials, an endpoint that does not answer).

The server is the one scripts/services/moto.sh starts (it speaks S3 as well as DynamoDB, on one
port): PSYCH_TEST_S3_ENDPOINT, or else PSYCH_TEST_DYNAMODB_ENDPOINT, names it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from botocore.exceptions import ConnectionClosedError

from psych_blob_s3 import S3BlobStore
from psych_core import BlobNotFound, BlobStore, StoreError, StoreUnavailable, blob_ref
from psych_runtime.testing.blob_contract import TENANT, BlobStoreContract
from tests._hostile_strings import HOSTILE

pytestmark = pytest.mark.contract

ROOT = Path(__file__).resolve().parents[2]
ENDPOINT = os.environ.get("PSYCH_TEST_S3_ENDPOINT") or os.environ.get(
    "PSYCH_TEST_DYNAMODB_ENDPOINT", "http://127.0.0.1:4566"
)
REGION = "us-east-1"
START = "scripts/services/moto.sh start"
MiB = 1024 * 1024
FIFTY_MB = 50 * MiB


def session() -> Any:  # an aioboto3.Session: aioboto3 ships no types
    import aioboto3  # type: ignore[import-untyped]

    return aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


SESSION = session()


def new_bucket() -> str:
    return f"psych-test-{uuid.uuid4().hex}"


def open_store(bucket: str | None = None, **options: Any) -> S3BlobStore:
    options.setdefault("session", SESSION)
    options.setdefault("retries", 1)
    return S3BlobStore(bucket or new_bucket(), endpoint_url=ENDPOINT, region=REGION, **options)


async def fresh_store(**options: Any) -> S3BlobStore:
    """A store on a new bucket (made by `create_bucket`); `drop` empties and deletes it."""
    store = open_store(**options)
    try:
        await store.create_bucket()
    except StoreUnavailable as exc:
        await store.close()
        pytest.fail(
            f"moto's S3 server does not answer at {ENDPOINT} ({exc}); start it with `{START}` "
            "(or scripts/dev-services.sh start) and export PSYCH_TEST_S3_ENDPOINT (or "
            "PSYCH_TEST_DYNAMODB_ENDPOINT: the same server) as it prints"
        )
    return store


@asynccontextmanager
async def raw_client() -> AsyncIterator[Any]:
    async with SESSION.client("s3", endpoint_url=ENDPOINT, region_name=REGION) as client:
        yield client


async def keys_in(bucket: str) -> list[str]:
    async with raw_client() as client:
        listed = await client.list_objects_v2(Bucket=bucket)
    return sorted(item["Key"] for item in listed.get("Contents", []))


async def uploads_in(bucket: str) -> list[dict[str, Any]]:
    """The multipart uploads begun in `bucket` and neither completed nor aborted."""
    async with raw_client() as client:
        listed = await client.list_multipart_uploads(Bucket=bucket)
    return list(listed.get("Uploads", []))


async def drop(store: S3BlobStore) -> None:
    """Empty and delete the store's bucket (moto keeps every byte in memory), and close it."""
    await store.close()
    async with raw_client() as client:
        for upload in await uploads_in(store.bucket):
            await client.abort_multipart_upload(
                Bucket=store.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
            )
        for key in await keys_in(store.bucket):
            await client.delete_object(Bucket=store.bucket, Key=key)
        await client.delete_bucket(Bucket=store.bucket)


@pytest.fixture
async def blobs() -> AsyncIterator[S3BlobStore]:
    store = await fresh_store()
    try:
        yield store
    finally:
        await drop(store)


class TestS3BlobStore(BlobStoreContract):
    async def create_blob_store(self) -> S3BlobStore:
        return await fresh_store()

    async def close_blob_store(self, blobs: BlobStore) -> None:
        assert isinstance(blobs, S3BlobStore)
        await drop(blobs)


class TestS3BlobStoreInParts(BlobStoreContract):
    """Every blob over 1 KiB as a multipart upload: concurrent puts of one blob race to
    complete theirs, and the losers' conditional completes are refused and aborted."""

    async def create_blob_store(self) -> S3BlobStore:
        return await fresh_store(multipart_threshold=1024)

    async def close_blob_store(self, blobs: BlobStore) -> None:
        assert isinstance(blobs, S3BlobStore)
        assert await uploads_in(blobs.bucket) == [], "every upload completed or aborted"
        await drop(blobs)


# -- multipart uploads -----------------------------------------------------------------------


async def etag_of(bucket: str, key: str) -> str:
    async with raw_client() as client:
        head = await client.head_object(Bucket=bucket, Key=key)
    return str(head["ETag"])


async def test_a_blob_over_the_threshold_goes_up_in_parts() -> None:
    store = await fresh_store(multipart_threshold=MiB, part_size=5 * MiB)
    try:
        data = os.urandom(11 * MiB)
        ref = await store.put(TENANT, data)
        [key] = await keys_in(store.bucket)
        assert (await etag_of(store.bucket, key)).endswith('-3"'), "5 MiB, 5 MiB and 1 MiB"
        assert await store.get(TENANT, ref) == data
        assert await uploads_in(store.bucket) == []
        # At the threshold: one PutObject (its ETag is the content's MD5, with no part count).
        small = os.urandom(MiB)
        await store.put(TENANT, small)
        small_key = store.tenant_prefix(TENANT) + hashlib.sha256(small).hexdigest()
        assert await etag_of(store.bucket, small_key) == f'"{hashlib.md5(small).hexdigest()}"'
    finally:
        await drop(store)


async def test_a_50_mb_blob_round_trips(blobs: S3BlobStore) -> None:
    data = os.urandom(FIFTY_MB)
    ref = await blobs.put(TENANT, data)
    assert ref == blob_ref(data)
    [key] = await keys_in(blobs.bucket)
    assert (await etag_of(blobs.bucket, key)).endswith('-7"'), "8 MiB parts by default"
    assert await blobs.get(TENANT, ref) == data
    assert await blobs.put(TENANT, data) == ref, "put again: it is there, nothing is sent"
    assert await keys_in(blobs.bucket) == [key]


def failing_part(number: int) -> Any:
    """A session whose requests to upload part `number` fail as a dropped connection does."""
    faulty = session()

    def drop_the_connection(request: Any, **_: Any) -> None:
        if f"partNumber={number}" in request.url:
            raise ConnectionClosedError(endpoint_url=request.url)

    faulty.events.register("before-send.s3.UploadPart", drop_the_connection)
    return faulty


async def test_a_failed_multipart_upload_leaves_no_parts(blobs: S3BlobStore) -> None:
    data = os.urandom(16 * MiB)
    async with open_store(
        blobs.bucket,
        session=failing_part(2),
        retries=0,
        multipart_threshold=MiB,
        part_size=5 * MiB,
        concurrency=1,
    ) as faulty:
        with pytest.raises(StoreUnavailable, match="did not answer UploadPart") as failed:
            await faulty.put(TENANT, data)
    assert not getattr(failed.value, "__notes__", []), "the abort worked: no note of parts left"
    assert await uploads_in(blobs.bucket) == [], "the upload was aborted, its parts with it"
    assert await keys_in(blobs.bucket) == []
    with pytest.raises(BlobNotFound):
        await blobs.get(TENANT, blob_ref(data))
    ref = await blobs.put(TENANT, data)  # the next put starts afresh
    assert await blobs.get(TENANT, ref) == data


async def test_a_cancelled_multipart_upload_leaves_no_parts(blobs: S3BlobStore) -> None:
    held = session()
    reached, release = asyncio.Event(), asyncio.Event()

    async def hold_part_two(request: Any, **_: Any) -> None:
        if "partNumber=2" in request.url:
            reached.set()
            await release.wait()

    held.events.register("before-send.s3.UploadPart", hold_part_two)
    async with open_store(
        blobs.bucket, session=held, multipart_threshold=MiB, part_size=5 * MiB, concurrency=2
    ) as store:
        put = asyncio.create_task(store.put(TENANT, os.urandom(12 * MiB)))
        await asyncio.wait_for(reached.wait(), 30)
        assert len(await uploads_in(blobs.bucket)) == 1
        put.cancel()
        with pytest.raises(asyncio.CancelledError):
            await put
    assert await uploads_in(blobs.bucket) == [], "cancelling the put aborted its upload"
    assert await keys_in(blobs.bucket) == []


async def test_an_upload_another_client_aborts_midway_is_unavailable(blobs: S3BlobStore) -> None:
    meddled = session()

    async def abort_it_first(request: Any, **_: Any) -> None:
        if "partNumber=2" in request.url and (uploads := await uploads_in(blobs.bucket)):
            [upload] = uploads
            async with raw_client() as client:
                await client.abort_multipart_upload(
                    Bucket=blobs.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                )

    meddled.events.register("before-send.s3.UploadPart", abort_it_first)
    async with open_store(
        blobs.bucket,
        session=meddled,
        retries=0,
        multipart_threshold=MiB,
        part_size=5 * MiB,
        concurrency=1,
    ) as store:
        # S3 answers the next part with NoSuchUpload, which the store reports as "aborted by
        # another client"; moto answers 500, which is a failure after retries. Either way the
        # put is unavailable, to be tried again, and nothing is left.
        with pytest.raises(StoreUnavailable, match=r"UploadPart|aborted by another client"):
            await store.put(TENANT, os.urandom(12 * MiB))
    assert await uploads_in(blobs.bucket) == [] and await keys_in(blobs.bucket) == []


# -- keys and tenants ------------------------------------------------------------------------


def test_every_tenant_has_a_folder_of_its_own_whatever_its_name() -> None:
    store = open_store("any-bucket")
    tenants = [
        "acme",
        "acme/",
        "acme/..",
        "../acme",
        "%2e%2e%2Facme",
        "",
        HOSTILE,
        "\ud800 lone surrogate",
        "t" * 5000,
    ]
    folders = [store.tenant_prefix(tenant) for tenant in tenants]
    assert len(set(folders)) == len(tenants)
    for folder in folders:
        assert re.fullmatch(r"psych-blobs/[0-9a-f]{64}/", folder), folder
    # A tenant named after another's folder (or a piece of it) gets a folder of its own too.
    acme = store.tenant_prefix("acme")
    for alias in (acme, acme.removeprefix("psych-blobs/"), acme.split("/")[1], acme + ".."):
        assert store.tenant_prefix(alias) != acme


async def test_a_tenant_named_like_another_tenants_keys_cannot_read_its_blobs(
    blobs: S3BlobStore,
) -> None:
    ref = await blobs.put("acme", b"acme's export")
    [key] = await keys_in(blobs.bucket)
    folder = blobs.tenant_prefix("acme")
    assert key == folder + ref.removeprefix("sha256:")
    assert "acme" not in key, "tenant names do not reach the bucket"
    missing = "sha256:" + hashlib.sha256(b"never stored").hexdigest()
    with pytest.raises(BlobNotFound) as absent:
        await blobs.get("globex", missing)
    expected = str(absent.value).replace(missing, "REF")
    hex_key = folder.split("/")[1]
    for intruder in (
        folder,
        hex_key,
        hex_key + "/",
        "psych-blobs/" + hex_key,
        f"../{hex_key}",
        f"globex/../{hex_key}",
        "ACME",
        "acme ",
        HOSTILE,
    ):
        with pytest.raises(BlobNotFound) as refused:
            await blobs.get(intruder, ref)
        assert str(refused.value).replace(ref, "REF") == expected, intruder
    assert await blobs.get("acme", ref) == b"acme's export"


async def test_a_malformed_reference_is_not_found_without_a_request(blobs: S3BlobStore) -> None:
    counted = session()
    sent: list[str] = []
    counted.events.register("before-send.s3", lambda request, **_: sent.append(request.url))
    async with open_store(blobs.bucket, session=counted) as store:
        await store.put(TENANT, b"something")
        before = len(sent)
        for ref in ("sha256:../../etc", "sha256:" + "0" * 63, "md5:0", "", "sha256:" + "A" * 64):
            with pytest.raises(BlobNotFound):
                await store.get(TENANT, ref)
        assert len(sent) == before


async def test_a_prefix_keeps_the_stores_keys_apart(blobs: S3BlobStore) -> None:
    async with open_store(blobs.bucket, prefix="elsewhere/blobs/") as other:
        ref = await other.put(TENANT, b"under another prefix")
        with pytest.raises(BlobNotFound):
            await blobs.get(TENANT, ref)
        assert await other.get(TENANT, ref) == b"under another prefix"
    [key] = await keys_in(blobs.bucket)
    assert key.startswith("elsewhere/blobs/")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"prefix": "a/../b/"}, "'..' segment"),
        ({"prefix": "./"}, "'..' segment"),
        ({"prefix": "/blobs/"}, "starts with '/'"),
        ({"prefix": "p" * 900}, "too long"),
        ({"part_size": 5 * MiB - 1}, "5 MiB"),
        ({"multipart_threshold": -1}, "multipart_threshold"),
        ({"concurrency": 0}, "concurrency"),
        ({"retries": -1}, "retries"),
    ],
)
def test_settings_s3_cannot_keep_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        open_store("any-bucket", **options)


def test_an_empty_bucket_name_is_refused() -> None:
    with pytest.raises(ValueError, match="bucket"):
        S3BlobStore("")


# -- content checked -------------------------------------------------------------------------


async def test_an_object_changed_in_the_bucket_is_refused(blobs: S3BlobStore) -> None:
    ref = await blobs.put(TENANT, b"the original")
    [key] = await keys_in(blobs.bucket)
    async with raw_client() as client:
        await client.put_object(Bucket=blobs.bucket, Key=key, Body=b"tampered")
    with pytest.raises(StoreError, match="does not match its reference") as refused:
        await blobs.get(TENANT, ref)
    assert not isinstance(refused.value, BlobNotFound | StoreUnavailable)
    # A put of the original finds another size there and says so, rather than trusting it.
    with pytest.raises(StoreError, match="was changed in the bucket"):
        await blobs.put(TENANT, b"the original")


async def test_a_store_in_another_process_reads_what_this_one_wrote(blobs: S3BlobStore) -> None:
    ref = await blobs.put(TENANT, b"shared")
    async with open_store(blobs.bucket, session=session()) as other:
        assert await other.get(TENANT, ref) == b"shared"


# -- the bucket --------------------------------------------------------------------------------


async def test_a_missing_bucket_says_so_and_is_never_created() -> None:
    bucket = new_bucket()
    async with open_store(bucket) as store:
        for call in (store.put(TENANT, b"data"), store.get(TENANT, blob_ref(b"data"))):
            with pytest.raises(StoreError, match=r"create_bucket\(\)") as missing:
                await call
            assert bucket in str(missing.value) and "does not exist" in str(missing.value)
            assert not isinstance(missing.value, StoreUnavailable | BlobNotFound)
    async with raw_client() as client:
        listed = await client.list_buckets()
    assert bucket not in [b["Name"] for b in listed["Buckets"]]


async def test_create_bucket_adds_the_rule_for_incomplete_uploads_once() -> None:
    store = await fresh_store(prefix="runs/blobs/")
    try:
        async with raw_client() as client:
            rules = (await client.get_bucket_lifecycle_configuration(Bucket=store.bucket))["Rules"]
            assert rules == [
                {
                    "ID": "psych-abort-incomplete-uploads",
                    "Filter": {"Prefix": "runs/blobs/"},
                    "Status": "Enabled",
                    "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1},
                }
            ]
            await client.delete_bucket_lifecycle(Bucket=store.bucket)
        await store.create_bucket()  # there already: left as it is
        async with raw_client() as client:
            with pytest.raises(client.exceptions.ClientError, match="NoSuchLifecycle"):
                await client.get_bucket_lifecycle_configuration(Bucket=store.bucket)
    finally:
        await drop(store)


async def test_create_bucket_outside_the_first_region_names_its_location() -> None:
    store = S3BlobStore(new_bucket(), endpoint_url=ENDPOINT, region="eu-west-1", session=SESSION)
    await store.create_bucket()
    try:
        async with raw_client() as client:
            located = await client.get_bucket_location(Bucket=store.bucket)
        assert located["LocationConstraint"] == "eu-west-1"
        ref = await store.put(TENANT, b"in Ireland")
        assert await store.get(TENANT, ref) == b"in Ireland"
    finally:
        await drop(store)


# -- credentials and the network ---------------------------------------------------------------


async def test_missing_credentials_say_where_they_were_looked_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    # No credential files, and no asking the instance metadata service (it is not loopback).
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    import aioboto3

    async with open_store(session=aioboto3.Session(region_name=REGION)) as store:
        for call in (store.put(TENANT, b"data"), store.get(TENANT, blob_ref(b"data"))):
            with pytest.raises(StoreError, match="no AWS credentials") as missing:
                await call
            text = str(missing.value)
            assert not isinstance(missing.value, StoreUnavailable)
            for place in ("AWS_ACCESS_KEY_ID", "~/.aws/credentials", "profile 'default'"):
                assert place in text, place
            assert "instance metadata" in text and "container role" in text


@asynccontextmanager
async def refusing_endpoint(code: str, message: str) -> AsyncIterator[str]:
    """An S3 endpoint on loopback that refuses every request with `code` (HTTP 403), as S3
    does for credentials it does not know: moto's server accepts any credentials."""

    async def handle(request: web.Request) -> web.Response:
        await request.read()
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{code}</Code><Message>{message}</Message>"
            "<RequestId>0</RequestId></Error>"
        )
        return web.Response(status=403, text=body, content_type="application/xml")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


async def test_refused_credentials_say_where_they_came_from_and_never_show_the_secret() -> None:
    import aioboto3

    given = aioboto3.Session(
        aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
        aws_secret_access_key=SECRET,
        region_name=REGION,
    )
    async with (
        refusing_endpoint(
            "InvalidAccessKeyId",
            "The AWS Access Key Id you provided does not exist in our records.",
        ) as url,
        S3BlobStore("bucket", endpoint_url=url, session=given, retries=0) as store,
    ):
        with pytest.raises(StoreError, match="credentials are not valid") as refused:
            await store.get(TENANT, blob_ref(b"data"))
        assert "the access key given to the aioboto3.Session" in str(refused.value)
        # A HEAD answer carries no reason: a put's first request is refused with a bare 403.
        with pytest.raises(StoreError, match="403 Forbidden") as bare:
            await store.put(TENANT, b"data")
        assert "not valid, or do not allow" in str(bare.value)
        assert "aioboto3.Session" in str(bare.value)
    for error in (refused.value, bare.value):
        assert not isinstance(error, StoreUnavailable)
        assert SECRET not in str(error) and "AKIAIOSFODNN7EXAMPLE" not in str(error)


async def test_denied_permissions_name_the_source_and_the_permissions_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    import aioboto3

    async with (
        refusing_endpoint("AccessDenied", "Access Denied") as url,
        S3BlobStore(
            "bucket", endpoint_url=url, session=aioboto3.Session(region_name=REGION), retries=0
        ) as store,
    ):
        with pytest.raises(StoreError, match="access denied") as denied:
            await store.get(TENANT, blob_ref(b"data"))
    text = str(denied.value)
    assert "the environment (AWS_ACCESS_KEY_ID" in text
    assert "s3:GetObject" in text and "s3:ListBucket" in text
    assert SECRET not in text


async def test_an_endpoint_that_does_not_answer_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here once the probe closes
    store = S3BlobStore(
        "bucket",
        endpoint_url=f"http://127.0.0.1:{port}",
        region=REGION,
        session=SESSION,
        retries=0,
        connect_timeout=1,
    )
    async with store:
        for call in (store.put(TENANT, b"data"), store.get(TENANT, blob_ref(b"data"))):
            with pytest.raises(StoreUnavailable, match=f"127.0.0.1:{port}"):
                await call


async def test_a_closed_store_refuses_calls(blobs: S3BlobStore) -> None:
    other = open_store(blobs.bucket)
    ref = await other.put(TENANT, b"x")
    await other.close()
    await other.close()
    with pytest.raises(StoreError, match="closed"):
        await other.get(TENANT, ref)


# -- the README ----------------------------------------------------------------------------------


def readme_example() -> tuple[str, str]:
    """The package README's first ```python block and the ```output block after it."""
    text = (ROOT / "packages" / "psych-blob-s3" / "README.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    output = text.split("```output\n", 1)[1].split("```", 1)[0]
    return code, output


async def test_the_readme_example_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    code, output = readme_example()
    bucket = new_bucket()
    assert '"psych-readme"' in code
    script = tmp_path / "example.py"
    script.write_text(code.replace('"psych-readme"', f'"{bucket}"'))
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PSYCH_TEST_S3_ENDPOINT": ENDPOINT},
        check=False,
    )
    try:
        assert done.returncode == 0, done.stderr
        assert done.stdout == output
    finally:
        await drop(open_store(bucket))

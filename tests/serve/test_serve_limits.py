"""Hostile sizes and slow clients against the real service (uvicorn on loopback, `promem serve`'s
settings) and the CLI: capped fields, capped bodies read before parsing, deep JSON, slow headers."""
import json
import socket
import time

import httpx
import pytest

from tests.serve.conftest import REPO, LiveServer

pytestmark = pytest.mark.slow
CFG = str(REPO / "configs" / "cpu.yaml")
OK = {"id": "x1", "time": "2026-09-17T08:00:00Z", "visual": "A bus stop."}


@pytest.fixture(scope="module")
def capped(serve_cfg, tmp_path_factory):
    from serve.app import create_app

    cfg = serve_cfg.model_copy(deep=True)
    cfg.limits.max_body_bytes = 300_000
    cfg.serve.header_timeout_s = 1.0
    cfg.serve.body_timeout_s = 2.0
    with LiveServer(create_app(cfg, tmp_path_factory.mktemp("store")), cfg) as srv:
        yield srv, cfg


def not_ingested(srv, user, event_id):
    return httpx.get(f"{srv.url}/v1/users/{user}/recall", params={"event_id": event_id}).status_code == 404


def test_a_field_over_its_cap_is_422_naming_the_event_and_the_key(capped):
    srv, cfg = capped
    big = dict(OK, id="x2", visual="v" * (cfg.limits.max_text_chars + 1))
    r = httpx.post(srv.url + "/v1/users/sz/events", json=[OK, big], timeout=60)
    assert r.status_code == 422
    detail = r.json()["detail"]
    assert "event 1 (id 'x2')" in detail and "'visual'" in detail and "limits.max_text_chars" in detail
    r = httpx.post(srv.url + "/v1/users/sz/events", json=dict(OK, location="L" * 600), timeout=60)
    assert r.status_code == 422 and "'location'" in r.json()["detail"]
    assert not_ingested(srv, "sz", "x1")


def test_a_body_over_the_cap_is_413_and_never_parsed(capped):
    srv, cfg = capped
    big = json.dumps([dict(OK, id=f"b{i}", visual="v" * 7000) for i in range(60)])  # every field within its cap
    r = httpx.post(srv.url + "/v1/users/sz2/events", content=big, headers={"content-type": "application/json"},
                   timeout=60)
    assert r.status_code == 413 and "limits.max_body_bytes" in r.json()["detail"]

    def chunks():  # no Content-Length, and never valid JSON: a 413 (not 422) shows it was not parsed
        yield b"["
        for _ in range(100):
            yield b'"' + b"v" * 5000 + b'",'

    r = httpx.post(srv.url + "/v1/users/sz2/events", content=chunks(), timeout=60)
    assert r.status_code == 413, r.text
    assert not_ingested(srv, "sz2", "b0")


def test_deeply_nested_json_is_422_not_500(capped):
    srv, _ = capped
    deep = b"[" * 100_000 + b"]" * 100_000
    r = httpx.post(srv.url + "/v1/users/sz3/events", content=deep, headers={"content-type": "application/json"},
                   timeout=60)
    assert r.status_code == 422 and "nested too deeply" in r.json()["detail"]
    r = httpx.put(srv.url + "/v1/users/sz3/profile", content=b'{"persona": ' + deep + b"}", timeout=60)
    assert r.status_code == 422
    assert httpx.get(srv.url + "/healthz").status_code == 200


def test_a_client_dripping_its_headers_is_cut_off(capped):
    srv, cfg = capped
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
    sock.sendall(b"POST /v1/users/u1/events HTTP/1.1\r\nHost: x\r\n")
    t0, closed = time.monotonic(), False
    while time.monotonic() - t0 < 8 * cfg.serve.header_timeout_s:  # bounded: fails rather than hangs
        try:
            sock.sendall(b"X")
            sock.settimeout(0.2)
            if sock.recv(1024) == b"":
                closed = True
                break
        except socket.timeout:
            continue
        except OSError:  # reset by the server
            closed = True
            break
    sock.close()
    took = time.monotonic() - t0
    assert closed and took < 4 * cfg.serve.header_timeout_s, took
    # a client that sends its request promptly is served as before, also on the next request of a connection
    with httpx.Client(base_url=srv.url) as client:
        assert client.get("/healthz").status_code == 200
        time.sleep(cfg.serve.header_timeout_s * 1.5)  # longer than the header deadline, between requests
        assert client.get("/healthz").status_code == 200


def test_with_a_token_the_api_docs_need_it_too(serve_cfg, tmp_path, monkeypatch):
    from serve.app import create_app

    monkeypatch.setenv(serve_cfg.serve.token_env, "s3cret")
    with LiveServer(create_app(serve_cfg, tmp_path)) as srv:
        for path in ("/docs", "/openapi.json", "/redoc", "/no-such-page"):
            assert httpx.get(srv.url + path).status_code == 401, path
        auth = {"Authorization": "Bearer s3cret"}
        assert httpx.get(srv.url + "/openapi.json", headers=auth).status_code == 200
        assert httpx.get(srv.url + "/docs", headers=auth).status_code == 200
        assert httpx.get(srv.url + "/healthz").status_code == 200


def test_remember_and_decide_skip_oversized_and_deeply_nested_lines(cli_env, tmp_path, capsys):
    from cli.main import main
    from core.config import load_config

    cap = load_config(CFG).limits.max_text_chars
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join([json.dumps(OK), json.dumps(dict(OK, id="x2", audio="a" * (cap + 1))),
                                 "[" * 100_000 + "]" * 100_000, json.dumps(dict(OK, id="x4"))]) + "\n")
    rc = main(["remember", str(events), "--store", str(tmp_path / "s"), "--user", "u1", "-c", CFG])
    got = capsys.readouterr()
    assert rc == 1 and "u1: 2 new" in got.out
    assert f"{events}:2: event 'x2': key 'audio' has {cap + 1} characters" in got.err
    assert f"{events}:3:" in got.err and "nested too deeply" in got.err
    rc = main(["decide", str(events), "--store", str(tmp_path / "s2"), "--user", "u1", "-o", str(tmp_path / "d.jsonl"),
               "-c", CFG])
    assert rc == 0
    assert [json.loads(x)["event_id"] for x in (tmp_path / "d.jsonl").read_text().splitlines()] == ["x1", "x4"]


def test_a_body_that_never_completes_is_answered_408(capped):
    srv, cfg = capped
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=4 * cfg.serve.body_timeout_s)
    sock.sendall(b"POST /v1/users/u9/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{\"id\": ")
    t0, reply = time.monotonic(), b""
    while b"serve.body_timeout_s" not in reply and time.monotonic() - t0 < 4 * cfg.serve.body_timeout_s:
        chunk = sock.recv(4096)
        if not chunk:
            break
        reply += chunk
    sock.close()
    assert reply.startswith(b"HTTP/1.1 408") and b"serve.body_timeout_s" in reply, reply
    assert time.monotonic() - t0 < 3 * cfg.serve.body_timeout_s

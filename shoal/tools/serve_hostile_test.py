"""`shoal serve` under hostile requests: every bad request gets a 4xx answer or a closed
connection, never a 5xx or a dead server, and the server then answers a valid request.

Regressions: a JSON body nested 100,000 levels deep (200 KB) overflowed the server's stack and
killed it; a text/csv body with bytes that are not UTF-8 got 500 "internal error" (the error
message quoting them could not be written as JSON). The server runs with --idle-timeout-secs 1 so
that stalled and idle connections close quickly. $SHOAL_BIN is the binary (ctest sets it).
"""
import concurrent.futures
import json
import socket
import time

import pytest

from serve_test import Server, eval_csv, export_base, shoal_bin, trained  # noqa: F401 (fixtures)

IDLE_TIMEOUT = 1.0


@pytest.fixture(scope="module")
def server(shoal_bin, trained):  # noqa: F811
    server = Server(shoal_bin, export_base(trained), "--threads", "8", "--idle-timeout-secs",
                    IDLE_TIMEOUT)
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="module")
def valid(trained):  # noqa: F811
    _, instances = eval_csv(trained)
    return {"instances": instances[:8]}


def assert_still_serving(server, valid):
    assert server.process.poll() is None, "the server died"
    status, body = server.predict(valid)
    assert status == 200, body
    assert len(body["predictions"]) == len(valid["instances"])


def raw_request(server, body, content_type="application/json"):
    """(status, body) of a POST whose body may be any bytes; JSON error bodies are decoded."""
    status, answer = server.request(":predict", body, content_type)
    return status, answer


def instance(**overrides):
    row = {"x1": 0.5, "x2": -0.25, "color": "red", "city": "city3"}
    row.update(overrides)
    return row


BAD_BODIES = {
    "nested_100k_levels": '{"instances":' + "[" * 100_000 + "]" * 100_000 + "}",
    "nested_objects": '{"instances":[' + '{"a":' * 50_000 + "1" + "}" * 50_000 + "]}",
    "deep_inside_a_value": json.dumps({"instances": [instance(x1=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[
        [1.0]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])]}),
    "unbalanced_deep": "[" * 200_000,
    "huge_number": '{"instances":[{"x1":1e999,"x2":0,"color":"red","city":"c"}]}',
    "beyond_float": '{"instances":[{"x1":1e39,"x2":0,"color":"red","city":"c"}]}',
    "huge_integer": '{"instances":[{"x1":' + "9" * 400 + ',"x2":0,"color":"red","city":"c"}]}',
    "nan_literal": '{"instances":[{"x1":NaN,"x2":0,"color":"red","city":"c"}]}',
    "infinity_literal": '{"instances":[{"x1":Infinity,"x2":0,"color":"red","city":"c"}]}',
    "invalid_utf8": b'{"instances":[{"x1":0,"x2":0,"color":"\xff\xfe","city":"c"}]}',
    "invalid_utf8_key": b'{"instances\x11e\xdc": [1]}',
    "instances_not_a_list": '{"instances": 5}',
    "instances_of_numbers": '{"instances": [1, 2, 3]}',
    "string_for_a_number": json.dumps({"instances": [instance(x1="abc")]}),
    "object_for_a_string": json.dumps({"instances": [instance(color={"b64": 3})]}),
    "bad_b64": json.dumps({"instances": [{"b64": "!!!not base64!!!"}]}),
    "list_for_a_scalar": json.dumps({"instances": [instance(x1=[0.0] * 1_000_000)]}),
    "inputs_wrong_length": json.dumps({"inputs": {"x1": [1.0, 2.0], "x2": [1.0],
                                                  "color": ["red"], "city": ["c"]}}),
    "inputs_a_list": '{"inputs": []}',
    "both_keys": '{"instances": [], "inputs": {}}',
    "unknown_key": '{"instancez": []}',
    "empty_body": "",
    "only_whitespace": "   \n",
    "not_json": "{",
    "a_json_string": '"instances"',
    "nul_bytes": b"\x00" * 1000,
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_a_bad_json_body_gets_400_and_the_server_stays_up(server, valid, name):
    status, body = raw_request(server, BAD_BODIES[name])
    assert 400 <= status < 500, (status, body)
    assert isinstance(body.get("error"), str) and body["error"], body
    assert_still_serving(server, valid)


CSV_BODIES = {
    "binary_bytes": b'{"instances\x11e\xdc": [1]}',
    "nul_in_a_number": b"0.5\x00,0.1,red,city1\n",
    "too_many_fields": "0.5,0.1,red,city1,x,y,z\n",
    "not_a_number": "abc,0.1,red,city1\n",
    "beyond_float": "1e39,0.1,red,city1\n",
    "unterminated_quote": '0.5,0.1,"red,city1\n',
}


@pytest.mark.parametrize("name", sorted(CSV_BODIES))
def test_a_bad_csv_body_gets_400_naming_the_row(server, valid, name):
    status, body = raw_request(server, CSV_BODIES[name], "text/csv")
    assert status == 400, (status, body)
    assert "row 0" in body["error"] or "line 1" in body["error"], body
    assert_still_serving(server, valid)


def connect(server):
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def closed_within(sock, seconds):
    """Whether the server closed `sock` (maybe after an answer) within `seconds`."""
    sock.settimeout(seconds)
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            data = sock.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


def test_a_partial_body_is_closed_after_the_idle_timeout(server, valid):
    sock = connect(server)
    try:
        sock.sendall(f"POST /v1/models/ctr:predict HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                     f'{{"instances"'.encode())
        assert closed_within(sock, IDLE_TIMEOUT + 10)
    finally:
        sock.close()
    assert_still_serving(server, valid)


def test_a_slow_body_is_closed_when_it_stalls(server, valid):
    body = json.dumps(valid).encode()
    sock = connect(server)
    try:
        sock.sendall(f"POST /v1/models/ctr:predict HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                     .encode())
        sock.sendall(body[:5])
        time.sleep(IDLE_TIMEOUT / 2)
        sock.sendall(body[5:10])  # still alive: each wait is under the timeout
        assert closed_within(sock, IDLE_TIMEOUT + 10)  # then it stalls
    finally:
        sock.close()
    assert_still_serving(server, valid)


def test_a_bad_request_line_or_header_is_refused(server, valid):
    for raw in [b"GARBAGE\r\n\r\n", b"POST /v1/models/ctr:predict HTTP/1.1\r\nContent-Length: -5"
                b"\r\n\r\n", b"POST /v1/models/ctr:predict HTTP/1.1\r\nContent-Length: "
                b"99999999999999999999\r\n\r\n", b"\xff\xfe\xfd\r\n\r\n" * 100]:
        sock = connect(server)
        try:
            sock.sendall(raw)
            sock.settimeout(IDLE_TIMEOUT + 10)
            answer = b""
            try:
                while True:
                    data = sock.recv(65536)
                    if not data:
                        break
                    answer += data
            except (ConnectionResetError, socket.timeout):
                pass
            if answer:
                status = int(answer.split(b" ", 2)[1])
                assert 400 <= status < 500, answer[:200]
        finally:
            sock.close()
    assert_still_serving(server, valid)


def test_many_idle_connections_are_closed_and_do_not_stop_the_server(server, valid):
    idle = [connect(server) for _ in range(64)]
    try:
        # The 8 request threads are each taken by an idle connection at first; each closes
        # after the idle timeout, so a valid request is answered within a few timeouts.
        start = time.monotonic()
        assert_still_serving(server, valid)
        assert time.monotonic() - start < 64 / 8 * IDLE_TIMEOUT + 30
        for sock in idle:
            assert closed_within(sock, 64 / 8 * IDLE_TIMEOUT + 30)
    finally:
        for sock in idle:
            sock.close()
    assert_still_serving(server, valid)


def test_64_clients_connecting_at_once_are_all_answered(server, valid):
    """64 clients at once, three times: every one is answered. (On a heavily loaded machine,
    cpp-httplib's listen backlog of 5 overflowed under bench/serve_load.py --clients 64 and the
    kernel reset connections; the server now listens with a deep backlog. This test passes with
    the old backlog on an idle machine: the load is what made the overflow.)"""
    body = json.dumps(valid)

    def one(_):
        return server.request(":predict", body)[0]

    for _ in range(3):
        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            statuses = list(pool.map(one, range(64)))
        assert statuses == [200] * 64, statuses

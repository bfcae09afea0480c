from __future__ import annotations

from sori.thinking.health import EndpointHealth

S = 1_000_000_000  # nanoseconds per second


def health() -> EndpointHealth:
    return EndpointHealth(
        ttfb_threshold_ms=500, window=10, min_samples=4, retry_initial_ms=2000, retry_max_ms=16000
    )


def test_a_slow_p95_takes_the_endpoint_out_only_after_enough_samples():
    h = health()
    for _ in range(3):
        h.record_ttfb(900, now_ns=0)
    assert h.in_rotation  # three samples are not enough to judge
    h.record_ttfb(900, now_ns=0)
    assert not h.in_rotation
    assert "p95" in h.out_reason


def test_one_slow_outlier_in_twenty_does_not():
    h = EndpointHealth(ttfb_threshold_ms=500, window=20, min_samples=5)
    for _ in range(19):
        h.record_ttfb(100, now_ns=0)
    h.record_ttfb(5000, now_ns=0)
    assert h.p95_ms() == 100
    assert h.in_rotation


def test_the_window_forgets_old_samples():
    h = EndpointHealth(ttfb_threshold_ms=500, window=5, min_samples=5)
    for _ in range(4):
        h.record_ttfb(100, now_ns=0)
    for _ in range(5):
        h.record_ttfb(200, now_ns=0)
    assert list(h.samples_ms) == [200] * 5


def test_failure_opens_the_breaker_and_probes_wait_longer_each_time():
    h = health()
    h.record_failure("cannot connect", now_ns=0)
    assert not h.in_rotation
    assert not h.probe_due(1 * S)
    assert h.probe_due(2 * S)
    h.probe_started()
    assert not h.probe_due(3 * S)  # one probe at a time
    h.probe_failed("probe failed", now_ns=2 * S)
    assert not h.probe_due(5 * S)
    assert h.probe_due(6 * S)  # waited 4 s
    waits = []
    now = 6 * S
    for _ in range(4):
        h.probe_started()
        h.probe_failed("probe failed", now_ns=now)
        waits.append((h.retry_at_ns - now) // S)
        now = h.retry_at_ns
    assert waits == [8, 16, 16, 16]  # doubling, up to the maximum


def test_a_successful_probe_restores_a_clean_record():
    h = health()
    for _ in range(4):
        h.record_ttfb(900, now_ns=0)
    assert not h.in_rotation
    h.probe_started()
    h.probe_succeeded()
    assert h.in_rotation
    assert h.p95_ms() is None
    assert h.failures == 0


def test_retry_after_lengthens_the_wait_up_to_the_maximum():
    h = health()
    h.record_failure("HTTP 429", now_ns=0, retry_after_s=10)
    assert not h.probe_due(9 * S)
    assert h.probe_due(10 * S)
    h2 = health()
    h2.record_failure("HTTP 429", now_ns=0, retry_after_s=3600)
    assert h2.probe_due(16 * S)

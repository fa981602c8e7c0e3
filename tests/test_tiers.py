"""The two tiers: every test that uses something slow is in the slow one, seen from what it uses."""

import pytest

from tests import tiers


@pytest.mark.parametrize(("code", "fixtures", "why"), [
    ("def test_x(postgres): ...", {"postgres"}, ["PostgreSQL"]),
    ("def test_x(browser): ...", {"browser"}, ["the browser"]),
    ("server = subprocess.Popen([sys.executable, '-m', 'x'])", set(), ["a server process"]),
    ("servers = [ServerProcess('a', folder)]", set(), ["a server process"]),
    ('run([sys.executable, "-m", "whisper_endpoint.batch", str(path)])', set(), ["a command that loads the models"]),
    ("check_call([venv / 'bin' / 'pip', 'install', '--no-deps', wheel])", set(), ["an install"]),
    ('ModelSettings(asr_model="embedded:base")', set(), ["the base model"]),
    ('decode(AUDIO / "long" / "fillets_long.flac")', set(), ["the long audio files"]),
    ("ray.init(num_cpus=2)", set(), ["Ray"]),
    ("def test_x(base_handler): handler = ray.init()", {"base_handler"}, ["Ray", "the base model"]),
])
def test_what_a_test_uses_makes_it_slow(code, fixtures, why):
    assert tiers.reasons(code, fixtures) == why


@pytest.mark.parametrize("code", [
    "def test_x(tiny_handler, clip): tiny_handler({'inputs': clip})",
    "subprocess.run([sys.executable, '-m', 'scripts.generate_docs', '--check'])",  # a short command
    "numbers = np.array(x)  # array., not ray.",
    "def test_x(diarizing_handler): ...  # a short clip, diarized",
])
def test_what_is_quick_stays_in_the_fast_tier(code):
    assert tiers.reasons(code, set()) == []


def test_every_collected_test_using_a_slow_fixture_is_marked(request):
    """Over this run's tests (the whole suite under ./test.sh): none with a slow fixture escapes the mark."""
    unmarked = [item.nodeid for item in request.session.items
                if set(item.fixturenames) & tiers.SLOW_FIXTURES.keys() and item.get_closest_marker("slow") is None]
    assert unmarked == []
    assert request.node.get_closest_marker("slow") is None  # this test itself is fast

"""Bounded memos by value and by identity (artist/memo.py)."""

from artist.memo import memoised, memoised_by_identity


def test_a_memo_by_value_makes_once_and_starts_afresh_when_full():
    memo, made = {}, []
    for key in ("a", "a", "b", "c", "a"):
        memoised(memo, key, lambda k=key: made.append(k) or k.upper(), bound=2)
    assert made == ["a", "b", "c", "a"]  # "c" found the memo full (a, b): cleared, so "a" is made again
    assert memo == {"c": "C", "a": "A"}


def test_a_memo_by_identity_answers_only_for_the_very_objects():
    memo, made = {}, []
    first, equal = [1, 2], [1, 2]
    assert memoised_by_identity(memo, (first,), lambda: made.append(1) or "x", bound=8) == "x"
    assert memoised_by_identity(memo, (first,), lambda: made.append(2) or "y", bound=8) == "x"
    assert memoised_by_identity(memo, (equal,), lambda: made.append(3) or "z", bound=8) == "z"
    assert made == [1, 3]
    # an entry left under an id by an object since gone (its id now another's) is not served
    stranger = [9]
    memo[(id(stranger),)] = (([0],), "stale")
    assert memoised_by_identity(memo, (stranger,), lambda: "fresh", bound=8) == "fresh"

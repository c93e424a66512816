# ruff: noqa: E501  (a data table: each program is one call whose docstring and inputs read best unwrapped)
"""Made-up algorithm programs with one injected bug each, in QuixBugs' layout: a check on code nothing was tuned on.

Eight sets of about 20 small programs each (none of them QuixBugs'), each with its correct version, a one-line
(or one-statement) bug of a class from QuixBugs' taxonomy (wrong operator, variable, comparison, missing
condition, off by one, swapped variables, wrong slice, wrong constant, wrong method, missing arithmetic,
missing call, missing line), a docstring, and JSON test inputs. Each set was first run as a held-out check of
the rules written before it, then its failures were read and more rules written (issue 27, session 24): set a
led to the slice, nested swap, running extreme, simultaneous assignment and order wrap templates and to the
assessment's identity-deletion and literal-only rules; set b to the neighbour near inputs, the counter length
guard, the missing term at bounds, the product augop and the flag reset; set c to the number kinds of a BRT's
expected value, the slice bound counted from the other end and the zero-divisor guard. Those three are
development data now. Set d was written after the last of those rules and run once, old and new side by side,
as the held-out check; its failures were not read. Set e was written after set d as a further held-out set.
Set f was written after set e as a further held-out set. Set g was written after set f as a further held-out set.
Set h was written after set g as a further held-out set.
Measure the next rule on d, or on a set written after it.

    python bench/data/algorithms.py --set c OUT_REPO      # a git repository in QuixBugs' layout
    QUIXBUGS_URL=OUT_REPO QUIXBUGS_REF=HEAD python bench/data/build_quixbugs.py --split all --out CASES
    reprobot eval --bench CASES -M 4

`build_quixbugs.py` runs each input on the buggy and the correct version in a sandbox and writes the cases
(report in one of four styles, oracle BRT, regression tests), exactly as for QuixBugs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
from pathlib import Path

#: set -> (name, docstring, correct code, (text of the bug site, buggy text), JSON inputs [[args], expected]).
PROGRAMS: dict[str, list[tuple[str, str, str, tuple[str, str], list[list[object]]]]] = {
    "a": [],
    "b": [],
    "c": [],
    "d": [],
    "e": [],
    "f": [],
    "g": [],
    "h": [],
}
_SET = "a"


def _program(name: str, doc: str, code: str, bug: tuple[str, str], tests: list[list[object]]) -> None:
    PROGRAMS[_SET].append((name, doc, textwrap.dedent(code).strip() + "\n", bug, tests))


# ---- set a ----------------------------------------------------------------------------------------------------

_SET = "a"

_program(
    "insertion_sort",
    "Insertion sort\n\nInput:\n    arr: A list of ints\n\nOutput:\n    A sorted copy of arr",
    """
def insertion_sort(arr):
    result = list(arr)
    for i in range(1, len(result)):
        key = result[i]
        j = i - 1
        while j >= 0 and result[j] > key:
            result[j + 1] = result[j]
            j -= 1
        result[j + 1] = key
    return result
""",
    ("while j >= 0 and", "while j > 0 and"),
    [
        [[[1, 2, 3]], [1, 2, 3]],
        [[[]], []],
        [[[3, 1, 2]], [1, 2, 3]],
        [[[5]], [5]],
        [[[1, 3, 2]], [1, 2, 3]],
        [[[2, 1]], [1, 2]],
    ],
)

_program(
    "run_length_encode",
    "Run-length encoding\n\nInput:\n    text: A string\n\nOutput:\n    A list of [char, count] pairs, one per run of equal characters",
    """
def run_length_encode(text):
    runs = []
    for char in text:
        if runs and runs[-1][0] == char:
            runs[-1][1] += 1
        else:
            runs.append([char, 1])
    return runs
""",
    ("runs[-1][1] += 1", "runs[-1][1] = 1"),
    [
        [[""], []],
        [["ab"], [["a", 1], ["b", 1]]],
        [["aab"], [["a", 2], ["b", 1]]],
        [["abbbc"], [["a", 1], ["b", 3], ["c", 1]]],
    ],
)

_program(
    "roman_to_int",
    "Roman numerals\n\nInput:\n    s: A valid Roman numeral\n\nOutput:\n    Its integer value",
    """
def roman_to_int(s):
    values = {'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
    total = 0
    for i, char in enumerate(s):
        value = values[char]
        if i + 1 < len(s) and values[s[i + 1]] > value:
            total -= value
        else:
            total += value
    return total
""",
    ("values[s[i + 1]] > value", "values[s[i + 1]] >= value"),
    [[["IV"], 4], [["XL"], 40], [["MCMXCIV"], 1994], [["XX"], 20], [["VI"], 6], [["III"], 3]],
)

_program(
    "lower_bound",
    "Lower bound\n\nInput:\n    arr: A sorted list of ints\n    x: A value\n\nOutput:\n    The first index i such that arr[i] >= x, or len(arr) if there is none",
    """
def lower_bound(arr, x):
    lo, hi = 0, len(arr)
    while lo < hi:
        mid = (lo + hi) // 2
        if arr[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo
""",
    ("if arr[mid] < x:", "if arr[mid] <= x:"),
    [
        [[[1, 3, 5], 4], 2],
        [[[], 1], 0],
        [[[1, 2, 3], 0], 0],
        [[[1, 2, 2, 3], 2], 1],
        [[[5, 5], 5], 0],
        [[[1, 2], 9], 2],
    ],
)

_program(
    "merge_intervals",
    "Merge intervals\n\nInput:\n    intervals: A list of [start, end] pairs\n\nOutput:\n    The sorted list of merged, non-overlapping intervals",
    """
def merge_intervals(intervals):
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
""",
    ("merged[-1][1] = max(merged[-1][1], end)", "merged[-1][1] = end"),
    [
        [[[[1, 3], [2, 6], [8, 10]]], [[1, 6], [8, 10]]],
        [[[]], []],
        [[[[5, 6], [1, 2]]], [[1, 2], [5, 6]]],
        [[[[1, 10], [2, 3]]], [[1, 10]]],
        [[[[1, 4], [4, 5]]], [[1, 5]]],
    ],
)

_program(
    "caesar",
    "Caesar cipher\n\nInput:\n    text: A string\n    shift: A non-negative int\n\nOutput:\n    text with every lowercase letter shifted by shift places, wrapping around the alphabet",
    """
def caesar(text, shift):
    out = []
    for char in text:
        if char.isalpha() and char.islower():
            out.append(chr((ord(char) - ord('a') + shift) % 26 + ord('a')))
        else:
            out.append(char)
    return ''.join(out)
""",
    ("chr((ord(char) - ord('a') + shift) % 26 + ord('a'))", "chr(ord(char) - ord('a') + shift + ord('a'))"),
    [[["abc", 1], "bcd"], [["hello world", 0], "hello world"], [["xyz", 3], "abc"], [["Hi!", 2], "Hk!"]],
)

_program(
    "digital_root",
    "Digital root\n\nInput:\n    n: A non-negative int\n\nOutput:\n    The single digit got by summing n's digits repeatedly",
    """
def digital_root(n):
    while n >= 10:
        n = sum(int(d) for d in str(n))
    return n
""",
    ("while n >= 10:", "while n > 10:"),
    [[[16], 7], [[942], 6], [[0], 0], [[10], 1], [[1234], 1]],
)

_program(
    "rotate",
    "Rotate a list\n\nInput:\n    lst: A list\n    k: A non-negative int\n\nOutput:\n    lst rotated right by k places",
    """
def rotate(lst, k):
    if not lst:
        return []
    k = k % len(lst)
    return lst[-k:] + lst[:-k]
""",
    ("    k = k % len(lst)\n", ""),
    [
        [[[1, 2, 3], 1], [3, 1, 2]],
        [[[], 5], []],
        [[[1, 2], 2], [1, 2]],
        [[[1, 2, 3], 4], [3, 1, 2]],
        [[[1, 2, 3, 4], 6], [3, 4, 1, 2]],
    ],
)

_program(
    "moving_average",
    "Moving average\n\nInput:\n    values: A list of numbers\n    window: A positive int\n\nOutput:\n    The average of every window of that many consecutive values",
    """
def moving_average(values, window):
    averages = []
    total = 0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        if i >= window - 1:
            averages.append(total / window)
    return averages
""",
    ("if i >= window:", "if i > window:"),
    [
        [[[1, 2], 2], [1.5]],
        [[[5], 1], [5.0]],
        [[[], 3], []],
        [[[1, 2, 3, 4], 2], [1.5, 2.5, 3.5]],
        [[[4, 4, 4], 3], [4.0]],
        [[[1, 2, 3], 1], [1.0, 2.0, 3.0]],
    ],
)

_program(
    "flatten_dict",
    "Flatten a nested dict\n\nInput:\n    d: A dict whose values may be dicts\n    prefix: The key prefix\n\nOutput:\n    A flat dict whose keys are the dotted paths to the leaves",
    """
def flatten_dict(d, prefix=''):
    flat = {}
    for key, value in d.items():
        name = prefix + '.' + key if prefix else key
        if isinstance(value, dict):
            flat.update(flatten_dict(value, name))
        else:
            flat[name] = value
    return flat
""",
    ("flatten_dict(value, name)", "flatten_dict(value, key)"),
    [
        [[{"a": 1, "b": 2}], {"a": 1, "b": 2}],
        [[{"a": {"b": 1}}], {"a.b": 1}],
        [[{"a": {"b": {"c": 1}}}], {"a.b.c": 1}],
        [[{}], {}],
    ],
)

_program(
    "chunk",
    "Chunk a list\n\nInput:\n    lst: A list\n    size: A positive int\n\nOutput:\n    lst cut into consecutive pieces of size items (the last may be shorter)",
    """
def chunk(lst, size):
    return [lst[i:i + size] for i in range(0, len(lst), size)]
""",
    ("range(0, len(lst), size)", "range(0, len(lst) - 1, size)"),
    [
        [[[1, 2, 3, 4], 2], [[1, 2], [3, 4]]],
        [[[], 3], []],
        [[[1, 2, 3], 3], [[1, 2, 3]]],
        [[[1, 2, 3], 2], [[1, 2], [3]]],
        [[[1], 1], [[1]]],
    ],
)

_program(
    "to_binary",
    "Binary digits\n\nInput:\n    n: A non-negative int\n\nOutput:\n    n written in base 2, as a string",
    """
def to_binary(n):
    if n == 0:
        return '0'
    digits = []
    while n > 0:
        digits.append(str(n % 2))
        n //= 2
    return ''.join(reversed(digits))
""",
    ("''.join(reversed(digits))", "''.join(digits)"),
    [[[5], "101"], [[0], "0"], [[1], "1"], [[7], "111"], [[6], "110"], [[4], "100"]],
)

_program(
    "longest_common_prefix",
    "Longest common prefix\n\nInput:\n    words: A list of strings\n\nOutput:\n    The longest string that every word starts with",
    """
def longest_common_prefix(words):
    if not words:
        return ''
    prefix = words[0]
    for word in words[1:]:
        while not word.startswith(prefix):
            prefix = prefix[:-1]
    return prefix
""",
    ("prefix = prefix[:-1]", "prefix = prefix[1:]"),
    [
        [[["a", "a"]], "a"],
        [[[]], ""],
        [[["abc"]], "abc"],
        [[["flower", "flow", "flight"]], "fl"],
        [[["dog", "racecar"]], ""],
    ],
)

_program(
    "two_sum",
    "Two sum\n\nInput:\n    nums: A list of ints\n    target: An int\n\nOutput:\n    The indices [i, j], i < j, of two different items that add up to target, or None",
    """
def two_sum(nums, target):
    seen = {}
    for i, num in enumerate(nums):
        if target - num in seen:
            return [seen[target - num], i]
        seen[num] = i
    return None
""",
    (
        "        if target - num in seen:\n            return [seen[target - num], i]\n        seen[num] = i\n",
        "        seen[num] = i\n        if target - num in seen:\n            return [seen[target - num], i]\n",
    ),
    [[[[2, 7, 11, 15], 9], [0, 1]], [[[1, 2], 10], None], [[[3, 2, 4], 6], [1, 2]], [[[3, 3], 6], [0, 1]]],
)

_program(
    "count_inversions",
    "Count inversions\n\nInput:\n    arr: A list of ints\n\nOutput:\n    The number of pairs i < j with arr[i] > arr[j]",
    """
def count_inversions(arr):
    count = 0
    for i in range(len(arr)):
        for j in range(i + 1, len(arr)):
            if arr[i] > arr[j]:
                count += 1
    return count
""",
    ("if arr[i] > arr[j]:", "if arr[j] > arr[i]:"),
    [[[[1, 1]], 0], [[[]], 0], [[[5]], 0], [[[2, 1, 2]], 1], [[[2, 1]], 1], [[[1, 2, 3]], 0]],
)

_program(
    "fib_list",
    "Fibonacci numbers\n\nInput:\n    n: A non-negative int\n\nOutput:\n    The first n Fibonacci numbers, starting 0, 1",
    """
def fib_list(n):
    seq = []
    a, b = 0, 1
    for _ in range(n):
        seq.append(a)
        a, b = b, a + b
    return seq
""",
    ("        a, b = b, a + b\n", "        a = b\n        b = a + b\n"),
    [[[0], []], [[1], [0]], [[2], [0, 1]], [[5], [0, 1, 1, 2, 3]], [[3], [0, 1, 1]]],
)

_program(
    "is_anagram",
    "Anagrams\n\nInput:\n    a, b: Two strings\n\nOutput:\n    Whether a and b have the same letters, ignoring case and spaces",
    """
def is_anagram(a, b):
    a = a.replace(' ', '').lower()
    b = b.replace(' ', '').lower()
    return sorted(a) == sorted(b)
""",
    ("b = b.replace(' ', '').lower()", "b = a.replace(' ', '').lower()"),
    [[["abc", "cba"], True], [["Dormitory", "dirty room"], True], [["abc", "abd"], False], [["a", "ab"], False]],
)

_program(
    "matrix_multiply",
    "Matrix product\n\nInput:\n    a, b: Matrices as lists of rows, len(a[0]) == len(b)\n\nOutput:\n    The product a times b",
    """
def matrix_multiply(a, b):
    rows, inner, cols = len(a), len(b), len(b[0])
    result = [[0] * cols for _ in range(rows)]
    for i in range(rows):
        for j in range(cols):
            for k in range(inner):
                result[i][j] += a[i][k] * b[k][j]
    return result
""",
    ("a[i][k] * b[k][j]", "a[i][k] * b[j][k]"),
    [
        [[[[1, 2], [3, 4]], [[1, 0], [0, 1]]], [[1, 2], [3, 4]]],
        [[[[2]], [[3]]], [[6]]],
        [[[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[19, 22], [43, 50]]],
        [[[[1, 2, 3]], [[1], [2], [3]]], [[14]]],
    ],
)

_program(
    "remove_duplicates",
    "Remove duplicates\n\nInput:\n    lst: A list of hashable items\n\nOutput:\n    lst without repeated items, first occurrences kept in order",
    """
def remove_duplicates(lst):
    seen = set()
    result = []
    for item in lst:
        if item not in seen:
            seen.add(item)
            result.append(item)
    return result
""",
    ("            seen.add(item)\n", ""),
    [[[[1, 2, 3]], [1, 2, 3]], [[[]], []], [[[1, 1, 2]], [1, 2]], [[["a", "b", "a"]], ["a", "b"]]],
)

_program(
    "is_prime",
    "Primality\n\nInput:\n    n: An int\n\nOutput:\n    Whether n is a prime number",
    """
def is_prime(n):
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True
""",
    ("while i * i <= n:", "while i * i < n:"),
    [[[7], True], [[1], False], [[2], True], [[15], False], [[4], False], [[9], False], [[25], False]],
)

_program(
    "max_subarray",
    "Maximum subarray sum\n\nInput:\n    nums: A non-empty list of ints\n\nOutput:\n    The largest sum of a non-empty run of consecutive items",
    """
def max_subarray(nums):
    best = current = nums[0]
    for num in nums[1:]:
        current = max(num, current + num)
        best = max(best, current)
    return best
""",
    ("best = current = nums[0]", "best = current = 0"),
    [[[[-2, 1, -3, 4, -1, 2, 1, -5, 4]], 6], [[[0, 3]], 3], [[[1, 2, 3]], 6], [[[-3, -1, -2]], -1], [[[5]], 5]],
)

_program(
    "collatz_steps",
    "Collatz steps\n\nInput:\n    n: A positive int\n\nOutput:\n    How many Collatz steps (halve if even, else 3n + 1) take n to 1",
    """
def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps
""",
    ("n = 3 * n + 1", "n = 3 * n - 1"),
    [[[1], 0], [[2], 1], [[4], 2], [[7], 16], [[3], 7], [[8], 3]],
)

# ---- set b ----------------------------------------------------------------------------------------------------

_SET = "b"

_program(
    "running_total",
    "Running totals\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    The list of prefix sums",
    """
def running_total(nums):
    totals = []
    total = 0
    for n in nums:
        total += n
        totals.append(total)
    return totals
""",
    ("        total += n\n", "        total = n\n"),
    [[[[]], []], [[[5]], [5]], [[[1, 2, 3]], [1, 3, 6]], [[[0, 4]], [0, 4]]],
)

_program(
    "second_largest",
    "Second largest\n\nInput:\n    nums: A list of ints\n\nOutput:\n    The largest value below the maximum, or None",
    """
def second_largest(nums):
    first = second = None
    for n in nums:
        if first is None or n > first:
            first, second = n, first
        elif n != first and (second is None or n > second):
            second = n
    return second
""",
    ("first, second = n, first", "first, second = n, second"),
    [[[[3, 2, 1]], 2], [[[5]], None], [[[2, 2]], None], [[[1, 2, 3]], 2], [[[1, 3, 2]], 2]],
)

_program(
    "count_in_range",
    "Count in range\n\nInput:\n    nums: A list of numbers\n    lo, hi: Bounds\n\nOutput:\n    How many items x satisfy lo <= x < hi",
    """
def count_in_range(nums, lo, hi):
    return sum(1 for n in nums if lo <= n < hi)
""",
    ("lo <= n < hi", "lo < n < hi"),
    [[[[1, 2, 3], 0, 10], 3], [[[], 0, 1], 0], [[[1, 2, 3], 1, 3], 2], [[[5], 5, 6], 1]],
)

_program(
    "merge_sorted",
    "Merge two sorted lists\n\nInput:\n    a, b: Sorted lists\n\nOutput:\n    One sorted list with the items of both",
    """
def merge_sorted(a, b):
    out = []
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]:
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out + a[i:] + b[j:]
""",
    ("while i < len(a) and j < len(b):", "while i < len(a):"),
    [[[[], [1]], [1]], [[[1], [2, 3]], [1, 2, 3]], [[[1, 3], [2]], [1, 2, 3]], [[[2], [1]], [1, 2]]],
)

_program(
    "last_index",
    "Last index\n\nInput:\n    items: A list\n    target: A value\n\nOutput:\n    The index of the last item equal to target, or -1",
    """
def last_index(items, target):
    for i in range(len(items) - 1, -1, -1):
        if items[i] == target:
            return i
    return -1
""",
    ("range(len(items) - 1, -1, -1)", "range(len(items) - 1, 0, -1)"),
    [[[[1, 2, 3], 3], 2], [[[1, 2, 1], 1], 2], [[[], 1], -1], [[[1, 2, 3], 1], 0], [[[4], 4], 0]],
)

_program(
    "lcm",
    "Least common multiple\n\nInput:\n    a, b: Positive ints\n\nOutput:\n    The smallest positive int that both divide",
    """
def lcm(a, b):
    x, y = a, b
    while y:
        x, y = y, x % y
    return a * b // x
""",
    ("x, y = y, x % y", "x, y = y, y % x"),
    [[[4, 6], 12], [[7, 7], 7], [[1, 1], 1], [[3, 5], 15], [[2, 4], 4]],
)

_program(
    "window",
    "Window\n\nInput:\n    seq: A list\n    start: An index\n    size: A non-negative int\n\nOutput:\n    The size items of seq from start on (fewer at the end)",
    """
def window(seq, start, size):
    return seq[start:start + size]
""",
    ("seq[start:start + size]", "seq[start:size]"),
    [[[[1, 2, 3, 4], 0, 2], [1, 2]], [[[], 0, 3], []], [[[1, 2, 3, 4], 1, 2], [2, 3]], [[[1, 2, 3], 2, 1], [3]]],
)

_program(
    "split_parity",
    "Split by parity\n\nInput:\n    nums: A list of ints\n\nOutput:\n    [evens, odds], each in input order",
    """
def split_parity(nums):
    evens, odds = [], []
    for n in nums:
        if n % 2 == 0:
            evens.append(n)
        else:
            odds.append(n)
    return [evens, odds]
""",
    ("if n % 2 == 0:", "if n % 2 == 1:"),
    [[[[]], [[], []]], [[[1, 2]], [[2], [1]]], [[[0]], [[0], []]], [[[3, 5, 4]], [[4], [3, 5]]]],
)

_program(
    "unique_words",
    "Unique words\n\nInput:\n    text: A string\n\nOutput:\n    The distinct words of text, lowercased and sorted",
    """
def unique_words(text):
    return sorted(set(text.lower().split()))
""",
    ("text.lower()", "text.upper()"),
    [[[""], []], [["1 2 1"], ["1", "2"]], [["b a B"], ["a", "b"]], [["Hello hello"], ["hello"]]],
)

_program(
    "oldest",
    "Oldest person\n\nInput:\n    people: A list of dicts with 'name' and 'age'\n\nOutput:\n    The name of the oldest person (the first of equals), or None",
    """
def oldest(people):
    best = None
    for person in people:
        if best is None or person["age"] > best["age"]:
            best = person
    return best["name"] if best else None
""",
    ('return best["name"] if best else None', 'return best["age"] if best else None'),
    [
        [[[]], None],
        [[[{"name": 5, "age": 5}]], 5],
        [[[{"name": "ann", "age": 3}, {"name": "bob", "age": 7}]], "bob"],
        [[[{"name": "cy", "age": 1}]], "cy"],
    ],
)

_program(
    "mean",
    "Arithmetic mean\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    Their mean, or 0 for an empty list",
    """
def mean(nums):
    if not nums:
        return 0
    return sum(nums) / len(nums)
""",
    ("return sum(nums) / len(nums)", "return sum(nums)"),
    [[[[]], 0], [[[5]], 5.0], [[[1, 2, 3]], 2.0], [[[2, 2]], 2.0]],
)

_program(
    "median",
    "Median\n\nInput:\n    nums: A non-empty list of numbers\n\nOutput:\n    The middle value of the sorted list (the mean of the two middle ones for an even length)",
    """
def median(nums):
    ordered = sorted(nums)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
""",
    ("ordered = sorted(nums)", "ordered = nums"),
    [[[[1, 2, 3]], 2], [[[5]], 5], [[[1, 2]], 1.5], [[[3, 1, 2]], 2], [[[4, 1, 3, 2]], 2.5]],
)

_program(
    "bubble_sort",
    "Bubble sort\n\nInput:\n    arr: A list of ints\n\nOutput:\n    A sorted copy of arr",
    """
def bubble_sort(arr):
    arr = list(arr)
    n = len(arr)
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if arr[j] > arr[j + 1]:
                arr[j], arr[j + 1] = arr[j + 1], arr[j]
                swapped = True
        if not swapped:
            break
    return arr
""",
    ("                swapped = True\n", ""),
    [[[[1, 2, 3]], [1, 2, 3]], [[[]], []], [[[2, 1]], [1, 2]], [[[3, 2, 1]], [1, 2, 3]], [[[4, 1, 3]], [1, 3, 4]]],
)

_program(
    "product",
    "Product\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    The product of the items (1 for an empty list)",
    """
def product(nums):
    result = 1
    for n in nums:
        result *= n
    return result
""",
    ("result *= n", "result = n"),
    [[[[]], 1], [[[5]], 5], [[[1, 1, 7]], 7], [[[2, 3]], 6], [[[2, 2, 2]], 8]],
)

_program(
    "positions",
    "Positions of a character\n\nInput:\n    text: A string\n    ch: A character\n\nOutput:\n    The indices where ch occurs in text",
    """
def positions(text, ch):
    return [i for i, c in enumerate(text) if c == ch]
""",
    ("[i for i, c in", "[c for i, c in"),
    [[["", "a"], []], [["xyz", "a"], []], [["abca", "a"], [0, 3]], [["b", "b"], [0]]],
)

_program(
    "clamp",
    "Clamp\n\nInput:\n    x, lo, hi: Numbers, lo <= hi\n\nOutput:\n    x limited to the range [lo, hi]",
    """
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
""",
    ("if x > hi:", "if x < hi:"),
    [[[-1, 0, 10], 0], [[10, 0, 10], 10], [[5, 0, 10], 5], [[15, 0, 10], 10]],
)

_program(
    "dig",
    "Nested lookup\n\nInput:\n    data: Nested dicts\n    path: A list of keys\n\nOutput:\n    The value at the end of the path, or None where the path leaves the dicts",
    """
def dig(data, path):
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data
""",
    ("if not isinstance(data, dict) or key not in data:", "if key not in data:"),
    [
        [[{"a": {"b": 1}}, ["a", "b"]], 1],
        [[{}, ["a"]], None],
        [[{"a": 1}, ["a", "b"]], None],
        [[{"a": "xyz"}, ["a", "y"]], None],
    ],
)

_program(
    "pad_left",
    "Pad on the left\n\nInput:\n    text: A string\n    width: An int\n    fill: One character\n\nOutput:\n    text with fill prepended until it is width long",
    """
def pad_left(text, width, fill):
    while len(text) < width:
        text = fill + text
    return text
""",
    ("while len(text) < width:", "while len(text) < width - 1:"),
    [[["ab", 2, "0"], "ab"], [["abc", 1, "0"], "abc"], [["7", 3, "0"], "007"], [["", 1, "x"], "x"]],
)

_program(
    "subtract_lists",
    "Element-wise difference\n\nInput:\n    a, b: Lists of numbers of equal length\n\nOutput:\n    The list of a[i] - b[i]",
    """
def subtract_lists(a, b):
    return [x - y for x, y in zip(a, b)]
""",
    ("[x - y for", "[y - x for"),
    [[[[1, 2], [1, 2]], [0, 0]], [[[], []], []], [[[5], [3]], [2]], [[[1, 9], [0, 4]], [1, 5]]],
)

_program(
    "flatten_once",
    "Flatten one level\n\nInput:\n    lists: A list whose items may be lists\n\nOutput:\n    The items, with the items of inner lists spliced in",
    """
def flatten_once(lists):
    out = []
    for item in lists:
        if isinstance(item, list):
            out.extend(item)
        else:
            out.append(item)
    return out
""",
    ("            out.extend(item)\n", "            out.append(item)\n"),
    [[[[]], []], [[[1, 2]], [1, 2]], [[[[1], 2]], [1, 2]], [[[[1, 2], [3]]], [1, 2, 3]]],
)

_program(
    "capitalize_sentences",
    "Capitalize sentences\n\nInput:\n    text: A string\n\nOutput:\n    text with the first letter of each sentence in upper case",
    """
def capitalize_sentences(text):
    out = []
    start = True
    for ch in text:
        if start and ch.isalpha():
            ch = ch.upper()
            start = False
        elif ch in ".!?":
            start = True
        out.append(ch)
    return "".join(out)
""",
    ("            start = False\n", ""),
    [[["a"], "A"], [[""], ""], [["x! y"], "X! Y"], [["hi. yo"], "Hi. Yo"]],
)

# ---- set c ----------------------------------------------------------------------------------------------------

_SET = "c"

_program(
    "balance",
    "Account balance\n\nInput:\n    transactions: A list of [kind, amount], kind 'deposit' or 'withdraw'\n\nOutput:\n    The balance after all of them, from 0",
    """
def balance(transactions):
    total = 0
    for kind, amount in transactions:
        if kind == "deposit":
            total += amount
        else:
            total -= amount
    return total
""",
    ("            total -= amount\n", "            total = amount\n"),
    [[[[]], 0], [[[["deposit", 5]]], 5], [[[["withdraw", 0]]], 0], [[[["deposit", 5], ["withdraw", 2]]], 3]],
)

_program(
    "weighted_sum",
    "Weighted sum\n\nInput:\n    values, weights: Lists of numbers of equal length\n\nOutput:\n    The sum of value times weight",
    """
def weighted_sum(values, weights):
    return sum(v * w for v, w in zip(values, weights))
""",
    ("v * w for", "v * v for"),
    [[[[], []], 0], [[[1], [1]], 1], [[[1, 2], [1, 1]], 3], [[[2], [3]], 6]],
)

_program(
    "all_positive",
    "All positive\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    Whether every item is greater than zero",
    """
def all_positive(nums):
    return all(n > 0 for n in nums)
""",
    ("n > 0 for", "n >= 0 for"),
    [[[[]], True], [[[1, 2]], True], [[[-1]], False], [[[0, 1]], False]],
)

_program(
    "first_long_word",
    "First long word\n\nInput:\n    words: A list of strings\n    n: A length\n\nOutput:\n    The first word of at least n letters only, or None",
    """
def first_long_word(words, n):
    for word in words:
        if len(word) >= n and word.isalpha():
            return word
    return None
""",
    ("if len(word) >= n and word.isalpha():", "if len(word) >= n:"),
    [[[["ab", "abc"], 3], "abc"], [[[], 1], None], [[["a1b2", "hello"], 4], "hello"]],
)

_program(
    "nth_from_end",
    "Nth from the end\n\nInput:\n    items: A list\n    n: 1 <= n <= len(items)\n\nOutput:\n    The n-th item counting from the end (1 is the last)",
    """
def nth_from_end(items, n):
    return items[len(items) - n]
""",
    ("items[len(items) - n]", "items[len(items) - n - 1]"),
    [[[[5], 1], 5], [[[1, 2, 3], 1], 3], [[[1, 2], 2], 1]],
)

_program(
    "power_mod",
    "Modular power\n\nInput:\n    base, exp, mod: Non-negative ints, mod > 1\n\nOutput:\n    base ** exp % mod",
    """
def power_mod(base, exp, mod):
    result = 1
    base %= mod
    while exp > 0:
        if exp % 2 == 1:
            result = result * base % mod
        base = base * base % mod
        exp //= 2
    return result
""",
    ("result = result * base % mod", "result = result * mod % base"),
    [[[3, 0, 7], 1], [[5, 1, 7], 5], [[2, 3, 5], 3], [[2, 10, 1000], 24]],
)

_program(
    "tail",
    "Tail\n\nInput:\n    items: A list\n    n: A non-negative int\n\nOutput:\n    The last n items",
    """
def tail(items, n):
    return items[-n:] if n else []
""",
    ("items[-n:] if n", "items[n:] if n"),
    [[[[1, 2, 3], 0], []], [[[], 3], []], [[[1, 2, 3], 1], [3]], [[[1, 2], 2], [1, 2]]],
)

_program(
    "histogram",
    "Histogram\n\nInput:\n    values: Ints in range(size)\n    size: The number of buckets\n\nOutput:\n    How often each value occurs",
    """
def histogram(values, size):
    counts = [0] * size
    for v in values:
        counts[v] += 1
    return counts
""",
    ("counts = [0] * size", "counts = [1] * size"),
    [[[[], 2], [0, 0]], [[[0, 1, 1], 2], [1, 2]]],
)

_program(
    "strip_all",
    "Strip lines\n\nInput:\n    lines: A list of strings\n\nOutput:\n    Each line without leading and trailing blanks",
    """
def strip_all(lines):
    return [line.strip() for line in lines]
""",
    ("line.strip()", "line.lstrip()"),
    [[[[]], []], [[["a"]], ["a"]], [[["  b"]], ["b"]], [[[" a "]], ["a"]]],
)

_program(
    "sort_by_age",
    "Sort by age\n\nInput:\n    people: A list of [name, age]\n\nOutput:\n    The list sorted by age, youngest first (stable)",
    """
def sort_by_age(people):
    return sorted(people, key=lambda p: p[1])
""",
    ("key=lambda p: p[1]", "key=lambda p: p[0]"),
    [[[[]], []], [[[["a", 1], ["b", 2]]], [["a", 1], ["b", 2]]], [[[["a", 2], ["b", 1]]], [["b", 1], ["a", 2]]]],
)

_program(
    "midpoints",
    "Midpoints\n\nInput:\n    xs: A list of numbers\n\nOutput:\n    The midpoint of each pair of neighbours",
    """
def midpoints(xs):
    return [(a + b) / 2 for a, b in zip(xs, xs[1:])]
""",
    ("[(a + b) / 2 for", "[(a + b) for"),
    [[[[]], []], [[[0, 0]], [0.0]], [[[1, 3]], [2.0]], [[[2, 4, 8]], [3.0, 6.0]]],
)

_program(
    "word_lengths",
    "Word lengths\n\nInput:\n    text: A string\n\nOutput:\n    The length of each word",
    """
def word_lengths(text):
    return [len(w) for w in text.split()]
""",
    ("[len(w) for w", "[w for w"),
    [[[""], []], [["a bb"], [1, 2]], [["hello"], [5]]],
)

_program(
    "count_runs",
    "Count runs\n\nInput:\n    nums: A list\n\nOutput:\n    How many runs of equal neighbours the list has",
    """
def count_runs(nums):
    runs = 0
    prev = None
    for n in nums:
        if n != prev:
            runs += 1
        prev = n
    return runs
""",
    ("        prev = n\n", ""),
    [[[[]], 0], [[[1]], 1], [[[1, 2]], 2], [[[1, 1]], 1], [[[1, 1, 2]], 2]],
)

_program(
    "find_peak",
    "Find a peak\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    The first index i with nums[i] above both neighbours, or -1",
    """
def find_peak(nums):
    for i in range(1, len(nums) - 1):
        if nums[i] > nums[i - 1] and nums[i] > nums[i + 1]:
            return i
    return -1
""",
    ("and nums[i] > nums[i + 1]", "and nums[i] < nums[i + 1]"),
    [[[[]], -1], [[[1, 1, 1]], -1], [[[1, 3, 2]], 1], [[[1, 2, 3]], -1]],
)

_program(
    "case_counts",
    "Case counts\n\nInput:\n    text: A string\n\nOutput:\n    [number of upper-case letters, number of lower-case letters]",
    """
def case_counts(text):
    upper = lower = 0
    for ch in text:
        if ch.isupper():
            upper += 1
        elif ch.islower():
            lower += 1
    return [upper, lower]
""",
    ("            lower += 1\n", "            upper += 1\n"),
    [[[""], [0, 0]], [["AB"], [2, 0]], [["aB"], [1, 1]], [["ab1"], [0, 2]]],
)

_program(
    "triangle",
    "Triangle rows\n\nInput:\n    n: A non-negative int\n\nOutput:\n    The row lengths 1..n of a triangle of n rows",
    """
def triangle(n):
    return [i for i in range(1, n + 1)]
""",
    ("range(1, n + 1)", "range(1, n)"),
    [[[0], []], [[1], [1]], [[3], [1, 2, 3]]],
)

_program(
    "safe_ratio",
    "Safe ratio\n\nInput:\n    a, b: Numbers\n\nOutput:\n    a / b, or None when b is zero",
    """
def safe_ratio(a, b):
    return a / b if b else None
""",
    ("return a / b if b else None", "return a / b"),
    [[[1, 2], 0.5], [[0, 5], 0.0], [[1, 0], None]],
)

_program(
    "count_between",
    "Count between\n\nInput:\n    nums: A list of numbers\n    lo, hi: Bounds\n\nOutput:\n    How many items lie in [lo, hi]",
    """
def between(x, lo, hi):
    return lo <= x <= hi


def count_between(nums, lo, hi):
    return sum(1 for n in nums if between(n, lo, hi))
""",
    ("between(n, lo, hi))", "between(lo, n, hi))"),
    [[[[], 0, 1], 0], [[[0], 0, 0], 1], [[[1, 5, 10], 0, 6], 2]],
)

_program(
    "rotate_left",
    "Rotate left\n\nInput:\n    lst: A list\n    k: 0 <= k <= len(lst)\n\nOutput:\n    lst rotated left by k places",
    """
def rotate_left(lst, k):
    return lst[k:] + lst[:k]
""",
    ("return lst[k:] + lst[:k]", "return lst[:k] + lst[k:]"),
    [[[[1, 2], 0], [1, 2]], [[[], 0], []], [[[1, 2], 2], [1, 2]], [[[1, 2, 3], 1], [2, 3, 1]]],
)

_program(
    "normalize_words",
    "Normalize words\n\nInput:\n    words: A list of strings\n\nOutput:\n    The distinct words in lower case, sorted",
    """
def normalize_words(words):
    return sorted(set(w.lower() for w in words))
""",
    ("sorted(set(w.lower() for w in words))", "sorted(w.lower() for w in words)"),
    [[[[]], []], [[["a", "B"]], ["a", "b"]], [[["a", "A"]], ["a"]]],
)

_program(
    "eval_rpn",
    "Reverse Polish notation\n\nInput:\n    tokens: Ints as strings and the operators + - *\n\nOutput:\n    The value of the expression",
    """
def eval_rpn(tokens):
    stack = []
    for tok in tokens:
        if tok in ("+", "-", "*"):
            b = stack.pop()
            a = stack.pop()
            if tok == "+":
                stack.append(a + b)
            elif tok == "-":
                stack.append(a - b)
            else:
                stack.append(a * b)
        else:
            stack.append(int(tok))
    return stack[-1]
""",
    ("stack.append(a - b)", "stack.append(b - a)"),
    [[[["3"]], 3], [[["2", "3", "+"]], 5], [[["2", "3", "*"]], 6], [[["5", "2", "-"]], 3]],
)


# ---- set d ----------------------------------------------------------------------------------------------------

_SET = "d"

_program(
    "countdown_sum",
    "Countdown sum\n\nInput:\n    n: A non-negative int\n\nOutput:\n    n + (n - 1) + ... + 1",
    """
def countdown_sum(n):
    total = 0
    while n > 0:
        total += n
        n -= 1
    return total
""",
    ("        total += n\n", "        total = n\n"),
    [[[0], 0], [[1], 1], [[3], 6], [[4], 10]],
)

_program(
    "max_gap",
    "Maximum gap\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    The largest difference between neighbours once sorted (0 for fewer than two)",
    """
def max_gap(nums):
    ordered = sorted(nums)
    best = 0
    for a, b in zip(ordered, ordered[1:]):
        best = max(best, b - a)
    return best
""",
    ("best = max(best, b - a)", "best = max(best, b - best)"),
    [[[[]], 0], [[[5]], 0], [[[1, 2, 10]], 8], [[[1, 3]], 2], [[[4, 9, 10]], 5]],
)

_program(
    "is_sorted",
    "Is sorted\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    Whether the list is in non-decreasing order",
    """
def is_sorted(nums):
    return all(a <= b for a, b in zip(nums, nums[1:]))
""",
    ("a <= b for", "a < b for"),
    [[[[]], True], [[[1, 2, 3]], True], [[[3, 1]], False], [[[1, 1]], True]],
)

_program(
    "first_negative",
    "First negative\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    The index of the first negative item, or -1",
    """
def first_negative(nums):
    i = 0
    while i < len(nums) and nums[i] >= 0:
        i += 1
    return i if i < len(nums) else -1
""",
    ("while i < len(nums) and nums[i] >= 0:", "while nums[i] >= 0:"),
    [[[[1, -2]], 1], [[[-1]], 0], [[[1, 2]], -1], [[[]], -1]],
)

_program(
    "repeat_join",
    "Repeat and join\n\nInput:\n    word: A string\n    n: A non-negative int\n    sep: A separator\n\nOutput:\n    n copies of word joined by sep",
    """
def repeat_join(word, n, sep):
    parts = []
    for _ in range(n):
        parts.append(word)
    return sep.join(parts)
""",
    ("range(n)", "range(n - 1)"),
    [[["a", 0, ","], ""], [["a", 1, ","], "a"], [["ab", 3, "-"], "ab-ab-ab"]],
)

_program(
    "percent",
    "Percentage\n\nInput:\n    part, whole: Numbers, whole != 0\n\nOutput:\n    part as a percentage of whole",
    """
def percent(part, whole):
    return 100 * part / whole
""",
    ("100 * part / whole", "100 * whole / part"),
    [[[2, 2], 100.0], [[5, 5], 100.0], [[1, 4], 25.0], [[3, 6], 50.0]],
)

_program(
    "middle_chars",
    "Middle characters\n\nInput:\n    s: A string\n\nOutput:\n    s without its first and last character",
    """
def middle_chars(s):
    return s[1:-1]
""",
    ("s[1:-1]", "s[1:]"),
    [[[""], ""], [["a"], ""], [["abc"], "b"], [["abcd"], "bc"]],
)

_program(
    "letter_counts",
    "Letter counts\n\nInput:\n    text: A string\n\nOutput:\n    How often each letter occurs",
    """
def letter_counts(text):
    counts = {}
    for ch in text:
        if ch.isalpha():
            counts[ch] = counts.get(ch, 0) + 1
    return counts
""",
    ("counts.get(ch, 0)", "counts.get(ch, 1)"),
    [[[""], {}], [["1"], {}], [["a"], {"a": 1}], [["aba"], {"a": 2, "b": 1}]],
)

_program(
    "without",
    "Without an item\n\nInput:\n    items: A list\n    x: A value\n\nOutput:\n    A copy of items without the first occurrence of x",
    """
def without(items, x):
    out = list(items)
    if x in out:
        out.remove(x)
    return out
""",
    ("out.remove(x)", "out.pop(x)"),
    [[[[1, 2, 3], 4], [1, 2, 3]], [[[], 1], []], [[[0, 1, 2], 1], [0, 2]], [[[5, 6], 6], [5]], [[[3, 1], 3], [1]]],
)

_program(
    "total_price",
    "Total price\n\nInput:\n    items: A list of dicts with 'price' and 'qty'\n\nOutput:\n    The sum of price times quantity",
    """
def total_price(items):
    return sum(i["price"] * i["qty"] for i in items)
""",
    ('i["price"] * i["qty"]', 'i["price"] * i["price"]'),
    [
        [[[]], 0],
        [[[{"price": 1, "qty": 1}]], 1],
        [[[{"price": 2, "qty": 1}]], 2],
        [[[{"price": 3, "qty": 2}, {"price": 1, "qty": 5}]], 11],
    ],
)

_program(
    "hours_minutes",
    "Hours and minutes\n\nInput:\n    total: A number of minutes\n\nOutput:\n    [hours, minutes]",
    """
def hours_minutes(total):
    return [total // 60, total % 60]
""",
    ("[total // 60, total % 60]", "[total // 60, total]"),
    [[[59], [0, 59]], [[0], [0, 0]], [[61], [1, 1]], [[120], [2, 0]]],
)

_program(
    "unique_count",
    "Unique count\n\nInput:\n    items: A list of hashable items\n\nOutput:\n    How many different items there are",
    """
def unique_count(items):
    return len(set(items))
""",
    ("len(set(items))", "len(items)"),
    [[[[]], 0], [[[1, 2]], 2], [[[1, 1]], 1], [[["a", "b", "a"]], 2]],
)

_program(
    "insert_sorted",
    "Insert into a sorted list\n\nInput:\n    lst: A sorted list\n    x: A value\n\nOutput:\n    A sorted copy of lst with x inserted",
    """
def insert_sorted(lst, x):
    out = list(lst)
    i = 0
    while i < len(out) and out[i] < x:
        i += 1
    out.insert(i, x)
    return out
""",
    ("out.insert(i, x)", "out.append(x)"),
    [[[[], 1], [1]], [[[1, 2], 3], [1, 2, 3]], [[[2, 3], 1], [1, 2, 3]], [[[1, 3], 2], [1, 2, 3]]],
)

_program(
    "apply_discounts",
    "Apply discounts\n\nInput:\n    price: A number\n    discounts: Percentages, applied one after another\n\nOutput:\n    The discounted price",
    """
def apply_discounts(price, discounts):
    for d in discounts:
        price -= price * d / 100
    return price
""",
    ("price -= price * d / 100", "price = price * d / 100"),
    [[[100, []], 100], [[100, [10]], 90.0], [[50, [0]], 50.0]],
)

_program(
    "longest_word",
    "Longest word\n\nInput:\n    words: A list of strings\n\nOutput:\n    The first longest word, or '' for no words",
    """
def longest_word(words):
    best = ""
    for word in words:
        if len(word) > len(best):
            best = word
    return best
""",
    ("if len(word) > len(best):", "if len(best) > len(word):"),
    [[[[]], ""], [[["a"]], "a"], [[["ab", "c"]], "ab"]],
)

_program(
    "grade",
    "Letter grade\n\nInput:\n    score: A number from 0 to 100\n\nOutput:\n    A for 90 and up, B for 80 and up, C for 70 and up, else F",
    """
def grade(score):
    if score >= 90:
        return "A"
    if score >= 80:
        return "B"
    if score >= 70:
        return "C"
    return "F"
""",
    ("if score >= 80:", "if score > 80:"),
    [[[95], "A"], [[85], "B"], [[75], "C"], [[10], "F"], [[80], "B"]],
)

_program(
    "parse_int",
    "Parse an int\n\nInput:\n    text: A string\n\nOutput:\n    The int it spells (an optional sign and digits, blanks around), or None",
    """
def parse_int(text):
    text = text.strip()
    if not text:
        return None
    sign = -1 if text[0] == "-" else 1
    digits = text[1:] if text[0] in "+-" else text
    if not digits.isdigit():
        return None
    return sign * int(digits)
""",
    ("    if not text:\n        return None\n", ""),
    [[["12"], 12], [["-3"], -3], [["x"], None], [[""], None], [["  "], None]],
)

_program(
    "chunk_count",
    "Chunk count\n\nInput:\n    n: A number of items\n    size: A positive chunk size\n\nOutput:\n    How many chunks of size items n items fill",
    """
def chunk_count(n, size):
    return (n + size - 1) // size
""",
    ("(n + size - 1) // size", "(n + size) // size"),
    [[[4, 3], 2], [[5, 3], 2], [[0, 3], 0], [[3, 3], 1]],
)

_program(
    "replace_all",
    "Replace all\n\nInput:\n    text, old, new: Strings, old not empty\n\nOutput:\n    text with every old replaced by new",
    """
def replace_all(text, old, new):
    return text.replace(old, new)
""",
    ("text.replace(old, new)", "text.replace(new, old)"),
    [[["abc", "z", "y"], "abc"], [["", "a", "b"], ""], [["aXa", "X", "Y"], "aYa"]],
)

_program(
    "reverse_words",
    "Reverse words\n\nInput:\n    text: A string\n\nOutput:\n    Its words in reverse order, joined by single spaces",
    """
def reverse_words(text):
    return " ".join(text.split()[::-1])
""",
    ("text.split()[::-1]", "text.split()[::1]"),
    [[["a"], "a"], [[""], ""], [["a b"], "b a"], [["x y z"], "z y x"]],
)

_program(
    "title_case",
    "Title case\n\nInput:\n    words: A list of strings\n\nOutput:\n    Each word with its first letter in upper case and the rest in lower case",
    """
def title_case(words):
    return [w.capitalize() for w in words]
""",
    ("w.capitalize()", "w.upper()"),
    [[[[]], []], [[["A"]], ["A"]], [[["ab"]], ["Ab"]]],
)

_program(
    "cumulative_max",
    "Cumulative maximum\n\nInput:\n    nums: A list of numbers\n\nOutput:\n    The largest item so far, at every position",
    """
def cumulative_max(nums):
    out = []
    best = None
    for n in nums:
        if best is None or n > best:
            best = n
        out.append(best)
    return out
""",
    ("        out.append(best)\n", ""),
    [[[[]], []], [[[1]], [1]], [[[1, 3, 2]], [1, 3, 3]]],
)


# ---- set e ----------------------------------------------------------------------------------------------------

_SET = "e"

_program(
    "bracket_depth",
    "Bracket depth\n\nInput:\n    text: A string whose parentheses are balanced\n\nOutput:\n    The deepest nesting of parentheses in text (0 for none)",
    """
def bracket_depth(text):
    depth = 0
    deepest = 0
    for char in text:
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif char == ")":
            depth -= 1
    return deepest
""",
    ("depth -= 1", "depth += 1"),
    [[[""], 0], [["abc"], 0], [["(a)"], 1], [["(())"], 2], [["()()"], 1], [["((x)(y))"], 2], [["f(g(h))"], 2]],
)

_program(
    "gcd_of_list",
    "Greatest common divisor of a list\n\nInput:\n    nums: A list of ints\n\nOutput:\n    The greatest common divisor of all items, never negative (0 for no items or all zeros)",
    """
def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def gcd_of_list(nums):
    result = 0
    for n in nums:
        result = _gcd(result, abs(n))
    return result
""",
    ("abs(n)", "n"),
    [
        [[[]], 0],
        [[[12]], 12],
        [[[12, 18]], 6],
        [[[-4]], 4],
        [[[-4, 6]], 2],
        [[[7, 13]], 1],
        [[[0, 5]], 5],
        [[[6, -9]], 3],
    ],
)

_program(
    "rotated_min",
    "Minimum of a rotated sorted list\n\nInput:\n    nums: A non-empty list of distinct ints, sorted ascending and then rotated by some amount\n\nOutput:\n    The smallest item, found by binary search",
    """
def rotated_min(nums):
    lo, hi = 0, len(nums) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if nums[mid] > nums[hi]:
            lo = mid + 1
        else:
            hi = mid
    return nums[lo]
""",
    ("len(nums) - 1", "len(nums) - 2"),
    [[[[5]], 5], [[[1, 2, 3]], 1], [[[3, 1, 2]], 1], [[[4, 5, 1, 2, 3]], 1], [[[2, 3, 4, 5, 1]], 1], [[[2, 1]], 1]],
)

_program(
    "transpose",
    "Matrix transpose\n\nInput:\n    matrix: A list of equally long rows\n\nOutput:\n    The transposed matrix, its rows being the columns of matrix",
    """
def transpose(matrix):
    if not matrix:
        return []
    rows, cols = len(matrix), len(matrix[0])
    return [[matrix[r][c] for r in range(rows)] for c in range(cols)]
""",
    ("matrix[r][c]", "matrix[c][r]"),
    [
        [[[]], []],
        [[[[1]]], [[1]]],
        [[[[1, 2], [2, 1]]], [[1, 2], [2, 1]]],
        [[[[1, 2], [3, 4]]], [[1, 3], [2, 4]]],
        [[[[1, 2, 3]]], [[1], [2], [3]]],
        [[[[5, 0], [0, 5]]], [[5, 0], [0, 5]]],
    ],
)

_program(
    "bfs_distances",
    "Breadth-first distances\n\nInput:\n    graph: A dict from each node to the list of its successors (nodes without successors may be missing)\n    start: A node\n\nOutput:\n    A dict from every node reachable from start to its fewest number of edges from start",
    """
from collections import deque


def bfs_distances(graph, start):
    dist = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in graph.get(node, []):
            if nxt not in dist:
                dist[nxt] = dist[node] + 1
                queue.append(nxt)
    return dist
""",
    ("queue.popleft()", "queue.pop()"),
    [
        [[{"a": []}, "a"], {"a": 0}],
        [[{}, "x"], {"x": 0}],
        [[{"a": ["b"], "b": ["c"], "c": []}, "a"], {"a": 0, "b": 1, "c": 2}],
        [[{"a": ["b", "c"], "b": ["d"], "c": ["e"], "e": ["d"]}, "a"], {"a": 0, "b": 1, "c": 1, "d": 2, "e": 2}],
        [[{"a": ["b"], "b": ["a"]}, "b"], {"b": 0, "a": 1}],
        [[{"s": ["a", "b"], "a": ["c"], "b": ["c"], "c": []}, "s"], {"s": 0, "a": 1, "b": 1, "c": 2}],
        [[{"a": ["b", "c"], "c": ["d"], "d": ["f"], "b": ["f"]}, "a"], {"a": 0, "b": 1, "c": 1, "d": 2, "f": 2}],
    ],
)

_program(
    "topo_order",
    "Topological order\n\nInput:\n    n: The number of nodes, named 0 to n - 1\n    edges: A list of [u, v] pairs, u must come before v\n\nOutput:\n    The smallest order (compared item by item) that keeps every edge, or None if the edges form a cycle",
    """
import heapq


def topo_order(n, edges):
    indegree = [0] * n
    adjacent = [[] for _ in range(n)]
    for u, v in edges:
        adjacent[u].append(v)
        indegree[v] += 1
    ready = [v for v in range(n) if indegree[v] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        u = heapq.heappop(ready)
        order.append(u)
        for v in adjacent[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, v)
    return order if len(order) == n else None
""",
    ("indegree[v] += 1", "indegree[u] += 1"),
    [
        [[0, []], []],
        [[1, []], [0]],
        [[3, [[0, 1], [1, 2]]], [0, 1, 2]],
        [[3, [[2, 0]]], [1, 2, 0]],
        [[2, [[0, 1], [1, 0]]], None],
        [[4, [[0, 1], [2, 3]]], [0, 1, 2, 3]],
        [[3, [[0, 1], [1, 2], [2, 0]]], None],
    ],
)

_program(
    "parse_csv_line",
    'Parse a CSV line\n\nInput:\n    line: One line of comma-separated fields; a field may be quoted with ", and "" inside quotes stands for one "\n\nOutput:\n    The list of field values',
    """
def parse_csv_line(line):
    fields = []
    field = ''
    quoted = False
    i = 0
    while i < len(line):
        char = line[i]
        if quoted:
            if char == '"' and i + 1 < len(line) and line[i + 1] == '"':
                field += '"'
                i += 1
            elif char == '"':
                quoted = False
            else:
                field += char
        elif char == '"':
            quoted = True
        elif char == ',':
            fields.append(field)
            field = ''
        else:
            field += char
        i += 1
    fields.append(field)
    return fields
""",
    ("            field = ''\n", ""),
    [
        [[""], [""]],
        [["a"], ["a"]],
        [["a,b,c"], ["a", "b", "c"]],
        [['"x,y",z'], ["x,y", "z"]],
        [['"say ""hi"""'], ['say "hi"']],
        [[","], ["", ""]],
    ],
)

_program(
    "count_set_bits",
    "Count set bits\n\nInput:\n    n: A non-negative int\n\nOutput:\n    How many 1 bits n has in binary",
    """
def count_set_bits(n):
    count = 0
    while n > 0:
        count += n & 1
        n >>= 1
    return count
""",
    ("n >>= 1", "n >>= 2"),
    [[[0], 0], [[1], 1], [[5], 2], [[2], 1], [[7], 3], [[16], 1], [[255], 8]],
)

_program(
    "is_power_of_two",
    "Power of two\n\nInput:\n    n: An int\n\nOutput:\n    Whether n is 2 ** k for some k >= 0",
    """
def is_power_of_two(n):
    return n > 0 and (n & (n - 1)) == 0
""",
    ("n > 0 and (n & (n - 1)) == 0", "(n & (n - 1)) == 0"),
    [[[0], False], [[1], True], [[2], True], [[6], False], [[64], True], [[-4], False]],
)

_program(
    "gray_code",
    "Gray code\n\nInput:\n    bits: A non-negative int\n\nOutput:\n    The 2 ** bits reflected Gray codes in order, as ints",
    """
def gray_code(bits):
    return [i ^ (i >> 1) for i in range(1 << bits)]
""",
    ("i ^ (i >> 1)", "i | (i >> 1)"),
    [
        [[0], [0]],
        [[1], [0, 1]],
        [[2], [0, 1, 3, 2]],
        [[3], [0, 1, 3, 2, 6, 7, 5, 4]],
        [[4], [0, 1, 3, 2, 6, 7, 5, 4, 12, 13, 15, 14, 10, 11, 9, 8]],
    ],
)

_program(
    "spiral_order",
    "Spiral order\n\nInput:\n    matrix: A list of equally long rows\n\nOutput:\n    The items read clockwise in a spiral from the top left corner inwards",
    """
def spiral_order(matrix):
    out = []
    if not matrix:
        return out
    top, bottom = 0, len(matrix) - 1
    left, right = 0, len(matrix[0]) - 1
    while top <= bottom and left <= right:
        for c in range(left, right + 1):
            out.append(matrix[top][c])
        top += 1
        for r in range(top, bottom + 1):
            out.append(matrix[r][right])
        right -= 1
        if top <= bottom:
            for c in range(right, left - 1, -1):
                out.append(matrix[bottom][c])
            bottom -= 1
        if left <= right:
            for r in range(bottom, top - 1, -1):
                out.append(matrix[r][left])
            left += 1
    return out
""",
    ("matrix[bottom][c]", "matrix[top][c]"),
    [
        [[[]], []],
        [[[[1]]], [1]],
        [[[[1, 2, 3]]], [1, 2, 3]],
        [[[[1, 2], [3, 4]]], [1, 2, 4, 3]],
        [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [1, 2, 3, 6, 9, 8, 7, 4, 5]],
        [[[[1], [2], [3]]], [1, 2, 3]],
        [[[[1, 2], [3, 4], [5, 6]]], [1, 2, 4, 6, 5, 3]],
    ],
)

_program(
    "compress_ranges",
    "Compress ranges\n\nInput:\n    nums: A sorted list of distinct non-negative ints\n\nOutput:\n    A list of strings, 'a-b' for each run of consecutive ints a to b and 'a' for a run of one",
    """
def _format_range(first, last):
    if first == last:
        return str(first)
    return str(first) + '-' + str(last)


def compress_ranges(nums):
    parts = []
    start = 0
    for i in range(1, len(nums) + 1):
        if i == len(nums) or nums[i] != nums[i - 1] + 1:
            parts.append(_format_range(nums[start], nums[i - 1]))
            start = i
    return parts
""",
    ("+ str(last)", "+ last"),
    [
        [[[]], []],
        [[[5]], ["5"]],
        [[[1, 3]], ["1", "3"]],
        [[[1, 2, 3, 5]], ["1-3", "5"]],
        [[[0, 1, 4, 6, 7, 8]], ["0-1", "4", "6-8"]],
        [[[2, 4, 6]], ["2", "4", "6"]],
    ],
)

_program(
    "kth_smallest",
    "K-th smallest\n\nInput:\n    nums: A non-empty list of ints\n    k: An int, 1 <= k <= len(nums)\n\nOutput:\n    The k-th smallest item (counting duplicates), found by quickselect",
    """
def kth_smallest(nums, k):
    pivot = nums[len(nums) // 2]
    lower = [n for n in nums if n < pivot]
    equal = [n for n in nums if n == pivot]
    higher = [n for n in nums if n > pivot]
    if k <= len(lower):
        return kth_smallest(lower, k)
    if k <= len(lower) + len(equal):
        return pivot
    return kth_smallest(higher, k - len(lower) - len(equal))
""",
    ("k - len(lower) - len(equal)", "k - len(lower)"),
    [
        [[[5], 1], 5],
        [[[3, 1, 2], 1], 1],
        [[[3, 1, 2], 3], 3],
        [[[7, 7, 7], 2], 7],
        [[[4, 2, 9, 1], 2], 2],
        [[[10, 40, 20, 30], 4], 40],
    ],
)

_program(
    "top_words",
    "Most frequent words\n\nInput:\n    text: A string of words separated by whitespace\n    k: A non-negative int\n\nOutput:\n    The k most frequent words, lower-cased, most frequent first and ties in alphabetical order",
    """
def _words(text):
    return text.lower().split()


def top_words(text, k):
    counts = {}
    for word in _words(text):
        counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    return ranked[:k]
""",
    (".split()", ".split(' ')"),
    [
        [["", 1], []],
        [["b a b", 1], ["b"]],
        [["b a b", 5], ["b", "a"]],
        [["The cat the hat", 2], ["the", "cat"]],
        [["x  y  x", 2], ["x", "y"]],
        [["to be or not to be", 3], ["be", "to", "not"]],
    ],
)

_program(
    "pascal_row",
    "Row of Pascal's triangle\n\nInput:\n    n: A non-negative int\n\nOutput:\n    The binomial coefficients C(n, 0) to C(n, n)",
    """
def pascal_row(n):
    row = [1]
    for k in range(n):
        row.append(row[k] * (n - k) // (k + 1))
    return row
""",
    ("(n - k)", "n"),
    [[[0], [1]], [[1], [1, 1]], [[2], [1, 2, 1]], [[4], [1, 4, 6, 4, 1]], [[5], [1, 5, 10, 10, 5, 1]]],
)

_program(
    "int_to_base",
    "Integer to base\n\nInput:\n    n: An int\n    base: An int from 2 to 36\n\nOutput:\n    n written in that base with digits 0-9 and a-z, with a leading '-' if n is negative",
    """
def int_to_base(n, base):
    digits = '0123456789abcdefghijklmnopqrstuvwxyz'
    if n == 0:
        return '0'
    sign = '-' if n < 0 else ''
    n = abs(n)
    out = []
    while n > 0:
        out.append(digits[n % base])
        n //= base
    return sign + ''.join(reversed(out))
""",
    ("    n = abs(n)\n", ""),
    [
        [[0, 2], "0"],
        [[5, 2], "101"],
        [[255, 16], "ff"],
        [[-10, 10], "-10"],
        [[35, 36], "z"],
        [[-1, 2], "-1"],
        [[6, 2], "110"],
    ],
)

_program(
    "two_stack_queue",
    "Queue from two stacks\n\nInput:\n    ops: A list of operations, ['push', x] or ['pop']\n\nOutput:\n    The values the pops return in order, first in first out (None for a pop on an empty queue)",
    """
def two_stack_queue(ops):
    inbox, outbox = [], []
    results = []
    for op in ops:
        if op[0] == 'push':
            inbox.append(op[1])
        else:
            if not outbox:
                while inbox:
                    outbox.append(inbox.pop())
            results.append(outbox.pop() if outbox else None)
    return results
""",
    (
        "            if not outbox:\n                while inbox:\n                    outbox.append(inbox.pop())\n",
        "            while inbox:\n                outbox.append(inbox.pop())\n",
    ),
    [
        [[[]], []],
        [[[["pop"]]], [None]],
        [[[["push", 1], ["push", 2], ["pop"], ["pop"]]], [1, 2]],
        [[[["push", 1], ["push", 2], ["pop"], ["push", 3], ["pop"], ["pop"]]], [1, 2, 3]],
        [[[["push", 1], ["pop"], ["pop"]]], [1, None]],
        [[[["push", "a"], ["push", "b"], ["pop"], ["push", "c"], ["push", "d"], ["pop"], ["pop"]]], ["a", "b", "c"]],
    ],
)

_program(
    "majority_element",
    "Majority element\n\nInput:\n    nums: A list of ints\n\nOutput:\n    The item that fills more than half of the list, or None if there is none",
    """
def majority_element(nums):
    candidate, count = None, 0
    for n in nums:
        if count == 0:
            candidate = n
        count += 1 if n == candidate else -1
    if nums.count(candidate) > len(nums) // 2:
        return candidate
    return None
""",
    ("> len(nums) // 2", ">= len(nums) // 2"),
    [
        [[[]], None],
        [[[3]], 3],
        [[[1, 2]], None],
        [[[2, 2, 1]], 2],
        [[[5, 5, 5, 2]], 5],
        [[[4, 4, 5, 5]], None],
        [[[1, 1, 1, 2, 3]], 1],
    ],
)

_program(
    "merge_sort_by_key",
    "Stable merge sort by key\n\nInput:\n    pairs: A list of [name, key] pairs with int keys\n\nOutput:\n    The pairs sorted by key, pairs with equal keys keeping their order",
    """
def merge_sort_by_key(pairs):
    if len(pairs) <= 1:
        return list(pairs)
    mid = len(pairs) // 2
    left = merge_sort_by_key(pairs[:mid])
    right = merge_sort_by_key(pairs[mid:])
    merged = []
    i = j = 0
    while i < len(left) and j < len(right):
        if left[i][1] <= right[j][1]:
            merged.append(left[i])
            i += 1
        else:
            merged.append(right[j])
            j += 1
    return merged + left[i:] + right[j:]
""",
    ("left[i][1] <= right[j][1]", "left[i][1] < right[j][1]"),
    [
        [[[]], []],
        [[[["a", 1]]], [["a", 1]]],
        [[[["a", 2], ["b", 1]]], [["b", 1], ["a", 2]]],
        [[[["a", 1], ["b", 1]]], [["a", 1], ["b", 1]]],
        [[[["x", 3], ["y", 1], ["z", 3], ["w", 2]]], [["y", 1], ["w", 2], ["x", 3], ["z", 3]]],
        [[[["p", 5], ["q", 4], ["r", 3]]], [["r", 3], ["q", 4], ["p", 5]]],
    ],
)

_program(
    "file_extension",
    "File extension\n\nInput:\n    name: A file path with '/' between folders\n\nOutput:\n    The text after the last '.' of the file name, or '' if it has none (a leading '.' does not start an extension)",
    """
def file_extension(name):
    base = name[name.rfind('/') + 1:]
    dot = base.rfind('.')
    if dot <= 0:
        return ''
    return base[dot + 1:]
""",
    ("base[dot + 1:]", "base[dot:]"),
    [
        [["README"], ""],
        [[".bashrc"], ""],
        [["dir/file.py"], "py"],
        [["x.tar.gz"], "gz"],
        [["a.b/c"], ""],
        [["notes."], ""],
        [["Makefile"], ""],
    ],
)

_program(
    "trimmed_mean",
    "Trimmed mean\n\nInput:\n    nums: A list of numbers\n    k: A non-negative int\n\nOutput:\n    The mean once the k smallest and the k largest items are dropped, or None if nothing is left",
    """
def trimmed_mean(nums, k):
    ordered = sorted(nums)
    kept = ordered[k:len(ordered) - k]
    if not kept:
        return None
    return sum(kept) / len(kept)
""",
    ("ordered[k:len(ordered) - k]", "ordered[k:-k]"),
    [
        [[[1, 2, 3], 0], 2.0],
        [[[1, 2, 3, 100], 1], 2.5],
        [[[5], 0], 5.0],
        [[[1, 2], 1], None],
        [[[], 0], None],
        [[[10, 1, 2, 3, -50], 1], 2.0],
    ],
)

_program(
    "leaderboard",
    "Leaderboard\n\nInput:\n    scores: A dict from player name to score\n\nOutput:\n    A list of [rank, name, score], highest score first and ties by name; tied scores share a rank and the next rank skips (1, 1, 3)",
    """
def leaderboard(scores):
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    rows = []
    for position, (name, score) in enumerate(ranked):
        if position > 0 and score == rows[-1][2]:
            rank = rows[-1][0]
        else:
            rank = position + 1
        rows.append([rank, name, score])
    return rows
""",
    ("(-item[1], item[0])", "(item[0], -item[1])"),
    [
        [[{}], []],
        [[{"a": 1}], [[1, "a", 1]]],
        [[{"amy": 3, "bob": 5}], [[1, "bob", 5], [2, "amy", 3]]],
        [[{"amy": 5, "bob": 3}], [[1, "amy", 5], [2, "bob", 3]]],
        [[{"c": 2, "a": 2, "b": 1}], [[1, "a", 2], [1, "c", 2], [3, "b", 1]]],
        [[{"x": 4, "y": 4}], [[1, "x", 4], [1, "y", 4]]],
    ],
)


# ---- set f ----------------------------------------------------------------------------------------------------

_SET = "f"

_program(
    "luhn_valid",
    "Luhn checksum\n\nInput:\n    number: A string of digits, possibly grouped with spaces\n\nOutput:\n    Whether number (at least two digits) passes the Luhn check",
    """
def luhn_valid(number):
    digits = [int(ch) for ch in number if ch != " "]
    if len(digits) < 2:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0
""",
    ("total % 10 == 0", "total // 10 == 0"),
    [
        [["79927398713"], True],
        [["79927398710"], False],
        [["4539 1488 0343 6467"], True],
        [["1234567812345678"], False],
        [["0"], False],
        [["00"], True],
        [["12"], False],
    ],
)

_program(
    "group_anagrams",
    "Group anagrams\n\nInput:\n    words: A list of lowercase words\n\nOutput:\n    The words grouped by anagram class: each group sorted, the groups sorted",
    """
def group_anagrams(words):
    groups = {}
    for word in words:
        key = "".join(sorted(word))
        groups.setdefault(key, []).append(word)
    return sorted(sorted(group) for group in groups.values())
""",
    (".append(word)", ".append(key)"),
    [
        [[["eat", "tea", "tan", "ate", "nat", "bat"]], [["ate", "eat", "tea"], ["bat"], ["nat", "tan"]]],
        [[[]], []],
        [[["ab", "ab"]], [["ab", "ab"]]],
        [[["abc"]], [["abc"]]],
        [[["a", "b", "a"]], [["a", "a"], ["b"]]],
        [[["listen", "silent", "enlist", "google"]], [["enlist", "listen", "silent"], ["google"]]],
    ],
)

_program(
    "word_wrap",
    "Greedy word wrap\n\nInput:\n    text: A string of words separated by whitespace\n    width: The longest line wanted\n\nOutput:\n    The words packed greedily into lines of at most width characters (a longer word gets a line of its own)",
    """
def word_wrap(text, width):
    lines = []
    line = ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines
""",
    ("len(word) <= width", "len(word) < width"),
    [
        [["the quick brown fox", 10], ["the quick", "brown fox"]],
        [["a b c d", 3], ["a b", "c d"]],
        [["", 5], []],
        [["hello", 2], ["hello"]],
        [["one two three", 7], ["one two", "three"]],
        [["  spaced   out  ", 20], ["spaced out"]],
    ],
)

_program(
    "count_islands",
    "Count islands\n\nInput:\n    grid: A rectangular list of rows of 0s and 1s\n\nOutput:\n    The number of groups of 1s connected up, down, left or right",
    """
def _sink(grid, r, c):
    if r < 0 or c < 0 or r >= len(grid) or c >= len(grid[0]):
        return
    if grid[r][c] != 1:
        return
    grid[r][c] = 0
    _sink(grid, r + 1, c)
    _sink(grid, r - 1, c)
    _sink(grid, r, c + 1)
    _sink(grid, r, c - 1)


def count_islands(grid):
    grid = [list(row) for row in grid]
    count = 0
    for r in range(len(grid)):
        for c in range(len(grid[r])):
            if grid[r][c] == 1:
                count += 1
                _sink(grid, r, c)
    return count
""",
    ("c >= len(grid[0])", "c >= len(grid)"),
    [
        [[[[1, 1], [0, 1]]], 1],
        [[[]], 0],
        [[[[1, 0], [0, 1]]], 2],
        [[[[1, 1, 0], [0, 1, 1], [0, 0, 1]]], 1],
        [[[[1, 1, 1]]], 1],
        [[[[1], [1], [0], [1]]], 2],
        [[[[1, 0, 1, 1], [1, 0, 0, 1]]], 2],
    ],
)

_program(
    "next_permutation",
    "Next permutation\n\nInput:\n    nums: A list of ints\n\nOutput:\n    The next arrangement of nums in lexicographic order, or the smallest one if nums is the largest",
    """
def next_permutation(nums):
    result = list(nums)
    i = len(result) - 2
    while i >= 0 and result[i] >= result[i + 1]:
        i -= 1
    if i >= 0:
        j = len(result) - 1
        while result[j] <= result[i]:
            j -= 1
        result[i], result[j] = result[j], result[i]
    result[i + 1:] = reversed(result[i + 1:])
    return result
""",
    ("result[i] >= result[i + 1]", "result[i] > result[i + 1]"),
    [
        [[[1, 2, 3]], [1, 3, 2]],
        [[[3, 2, 1]], [1, 2, 3]],
        [[[1, 1, 5]], [1, 5, 1]],
        [[[]], []],
        [[[2, 2, 1]], [1, 2, 2]],
        [[[1, 5, 1]], [5, 1, 1]],
        [[[1, 3, 3, 2]], [2, 1, 3, 3]],
    ],
)

_program(
    "range_sums",
    "Range sums\n\nInput:\n    nums: A list of ints\n    queries: A list of [lo, hi] index pairs, both ends included\n\nOutput:\n    The sum of nums[lo..hi] for each query, in order",
    """
def range_sums(nums, queries):
    prefix = [0]
    for x in nums:
        prefix.append(prefix[-1] + x)
    return [prefix[hi + 1] - prefix[lo] for lo, hi in queries]
""",
    ("prefix[hi + 1]", "prefix[hi]"),
    [
        [[[1, 2, 3, 4], [[0, 3], [1, 2]]], [10, 5]],
        [[[5, 0, 3], [[0, 1]]], [5]],
        [[[], []], []],
        [[[2, -1, 0], [[1, 2], [0, 2]]], [-1, 1]],
        [[[7], [[0, 0]]], [7]],
        [[[4, 4, 0, 1], [[2, 2], [0, 2]]], [0, 8]],
    ],
)

_program(
    "brackets_balanced",
    "Balanced brackets\n\nInput:\n    s: A string that may contain (), [] and {} among other characters\n\nOutput:\n    Whether every bracket in s is closed by the matching kind, in order",
    """
def brackets_balanced(s):
    pairs = {")": "(", "]": "[", "}": "{"}
    stack = []
    for ch in s:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack.pop() != pairs[ch]:
                return False
    return not stack
""",
    ("if not stack or stack.pop()", "if stack.pop()"),
    [
        [["([]{})"], True],
        [[""], True],
        [["(]"], False],
        [[")("], False],
        [["(()"], False],
        [["a(b)c]"], False],
        [["{[(x)]}y"], True],
    ],
)

_program(
    "rotate_clockwise",
    "Rotate a matrix clockwise\n\nInput:\n    matrix: A rectangular list of rows\n\nOutput:\n    matrix turned a quarter turn clockwise (a new list of rows)",
    """
def rotate_clockwise(matrix):
    if not matrix:
        return []
    rows, cols = len(matrix), len(matrix[0])
    result = [[0] * rows for _ in range(cols)]
    for r in range(rows):
        for c in range(cols):
            result[c][rows - 1 - r] = matrix[r][c]
    return result
""",
    ("[[0] * rows for _ in range(cols)]", "[[0] * cols for _ in range(rows)]"),
    [
        [[[]], []],
        [[[[1, 2], [3, 4]]], [[3, 1], [4, 2]]],
        [[[[1]]], [[1]]],
        [[[[1, 2, 3]]], [[1], [2], [3]]],
        [[[[1], [2]]], [[2, 1]]],
        [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[7, 4, 1], [8, 5, 2], [9, 6, 3]]],
    ],
)

_program(
    "format_thousands",
    "Thousands separators\n\nInput:\n    n: An int\n\nOutput:\n    n written in decimal with a comma between groups of three digits",
    """
def format_thousands(n):
    sign = "-" if n < 0 else ""
    digits = str(abs(n))
    groups = []
    while len(digits) > 3:
        groups.append(digits[-3:])
        digits = digits[:-3]
    groups.append(digits)
    return sign + ",".join(reversed(groups))
""",
    ("groups.append(digits[-3:])", "groups.append(digits[3:])"),
    [
        [[0], "0"],
        [[999], "999"],
        [[-512], "-512"],
        [[1234], "1,234"],
        [[1234567], "1,234,567"],
        [[100000], "100,000"],
        [[-1000000], "-1,000,000"],
    ],
)

_program(
    "longest_increasing_run",
    "Longest increasing run\n\nInput:\n    nums: A list of ints\n\nOutput:\n    The length of the longest stretch of consecutive strictly increasing values",
    """
def longest_increasing_run(nums):
    if not nums:
        return 0
    best, current = 1, 1
    for i in range(1, len(nums)):
        if nums[i] > nums[i - 1]:
            current += 1
        else:
            current = 1
        best = max(best, current)
    return best
""",
    ("else:\n            current = 1", "else:\n            current = 0"),
    [
        [[[]], 0],
        [[[5]], 1],
        [[[1, 2, 3]], 3],
        [[[3, 2, 1]], 1],
        [[[1, 3, 2, 4, 5]], 3],
        [[[2, 2, 2]], 1],
        [[[1, 2, 0, 1, 2, 3]], 4],
    ],
)

_program(
    "parse_query",
    "Parse a query string\n\nInput:\n    query: A string of key=value pairs joined by &\n\nOutput:\n    A dict from key to value; a pair without = maps its key to the empty string, the value runs to the end of the pair, a later key wins",
    """
def parse_query(query):
    result = {}
    if not query:
        return result
    for part in query.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        result[key] = value
    return result
""",
    ("part.partition(", "part.rpartition("),
    [
        [["a=1&b=2"], {"a": "1", "b": "2"}],
        [[""], {}],
        [["flag&x=1"], {"flag": "", "x": "1"}],
        [["expr=a=b"], {"expr": "a=b"}],
        [["a=1&&b="], {"a": "1", "b": ""}],
        [["k=v&k=w"], {"k": "w"}],
    ],
)

_program(
    "dijkstra",
    "Shortest distances\n\nInput:\n    graph: A dict from node to a list of [neighbour, weight] edges, weights not negative\n    start: A node\n\nOutput:\n    A dict from every node reachable from start to its shortest distance",
    """
import heapq


def dijkstra(graph, start):
    dist = {start: 0}
    heap = [(0, start)]
    done = set()
    while heap:
        d, node = heapq.heappop(heap)
        if node in done:
            continue
        done.add(node)
        for nb, w in graph.get(node, []):
            nd = d + w
            if nb not in dist or nd < dist[nb]:
                dist[nb] = nd
                heapq.heappush(heap, (nd, nb))
    return dist
""",
    ("nd = d + w", "nd = w"),
    [
        [[{"a": [["b", 2], ["c", 5]]}, "a"], {"a": 0, "b": 2, "c": 5}],
        [[{"a": [["b", 1]], "b": [["c", 2]]}, "a"], {"a": 0, "b": 1, "c": 3}],
        [[{"a": [["b", 4], ["c", 1]], "c": [["b", 1]]}, "a"], {"a": 0, "b": 2, "c": 1}],
        [[{}, "a"], {"a": 0}],
        [[{"a": [["b", 1]], "b": [["a", 1]]}, "a"], {"a": 0, "b": 1}],
        [[{"x": [["y", 3]], "y": [["z", 0]]}, "x"], {"x": 0, "y": 3, "z": 3}],
    ],
)

_program(
    "camel_to_snake",
    "camelCase to snake_case\n\nInput:\n    name: An identifier in camelCase or PascalCase, possibly with underscores\n\nOutput:\n    name in lower case with an underscore before each capital that does not start the name or follow an underscore",
    """
def camel_to_snake(name):
    out = []
    for i, ch in enumerate(name):
        if ch.isupper():
            if i > 0 and name[i - 1] != "_":
                out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)
""",
    ("if i > 0 and name[i - 1]", "if name[i - 1]"),
    [
        [["camelCase"], "camel_case"],
        [["CamelCase"], "camel_case"],
        [["already_snake"], "already_snake"],
        [["my_Var"], "my_var"],
        [[""], ""],
        [["X"], "x"],
        [["userIdValue"], "user_id_value"],
    ],
)

_program(
    "bit_distance",
    "Bit distance\n\nInput:\n    a: A non-negative int\n    b: A non-negative int\n\nOutput:\n    The number of bit positions in which a and b differ",
    """
def bit_distance(a, b):
    x = a ^ b
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count
""",
    ("a ^ b", "a | b"),
    [
        [[1, 4], 2],
        [[3, 1], 1],
        [[0, 0], 0],
        [[7, 0], 3],
        [[5, 5], 0],
        [[8, 3], 3],
        [[255, 1], 7],
    ],
)

_program(
    "round_robin",
    "Round-robin scheduling\n\nInput:\n    tasks: A list of [name, time needed] pairs, in arrival order\n    quantum: The most time a task runs before going to the back of the queue\n\nOutput:\n    A list of [name, finishing time] pairs in the order the tasks finish",
    """
from collections import deque


def round_robin(tasks, quantum):
    queue = deque((name, need) for name, need in tasks)
    clock = 0
    finished = []
    while queue:
        name, left = queue.popleft()
        run = min(quantum, left)
        clock += run
        if left > run:
            queue.append((name, left - run))
        else:
            finished.append([name, clock])
    return finished
""",
    ("left - run", "run - left"),
    [
        [[[["a", 3], ["b", 5], ["c", 2]], 2], [["c", 6], ["a", 7], ["b", 10]]],
        [[[["a", 1], ["b", 2]], 2], [["a", 1], ["b", 3]]],
        [[[], 3], []],
        [[[["x", 4]], 1], [["x", 4]]],
        [[[["p", 0], ["q", 3]], 3], [["p", 0], ["q", 3]]],
        [[[["a", 4], ["b", 1]], 3], [["b", 4], ["a", 5]]],
    ],
)

_program(
    "days_in_month",
    "Days in a month\n\nInput:\n    year: A year of the Gregorian calendar\n    month: A month number, 1 to 12\n\nOutput:\n    The number of days in that month of that year",
    """
def _is_leap(year):
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if month == 2 and _is_leap(year):
        return 29
    return lengths[month - 1]
""",
    ("[31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]", "[31, 28, 31, 30, 31, 30, 31, 30, 31, 30, 31, 30]"),
    [
        [[2023, 1], 31],
        [[2024, 2], 29],
        [[1900, 2], 28],
        [[2000, 2], 29],
        [[2023, 8], 31],
        [[2023, 12], 31],
        [[2023, 4], 30],
    ],
)

_program(
    "palindrome_phrase",
    "Palindrome phrase\n\nInput:\n    text: A string\n\nOutput:\n    Whether the letters and digits of text read the same both ways, ignoring case",
    """
def palindrome_phrase(text):
    chars = [ch.lower() for ch in text if ch.isalnum()]
    return chars == chars[::-1]
""",
    ("ch.lower()", "ch"),
    [
        [["A man, a plan, a canal: Panama"], True],
        [["racecar"], True],
        [[""], True],
        [["hello"], False],
        [["No lemon, no melon"], True],
        [["12 21"], True],
    ],
)

_program(
    "sliding_window_max",
    "Sliding window maximum\n\nInput:\n    nums: A list of ints\n    k: The window length, at least 1\n\nOutput:\n    The maximum of each window of k consecutive values, left to right",
    """
from collections import deque


def sliding_window_max(nums, k):
    result = []
    window = deque()
    for i, x in enumerate(nums):
        while window and nums[window[-1]] <= x:
            window.pop()
        window.append(i)
        if window[0] <= i - k:
            window.popleft()
        if i >= k - 1:
            result.append(nums[window[0]])
    return result
""",
    ("window[0] <= i - k:", "window[0] <= i - k - 1:"),
    [
        [[[1, 3, -1, -3, 5, 3, 6, 7], 3], [3, 3, 5, 5, 6, 7]],
        [[[1, 2, 3, 4], 2], [2, 3, 4]],
        [[[], 3], []],
        [[[4, 2, 12, 3], 1], [4, 2, 12, 3]],
        [[[9, 8, 7, 6], 2], [9, 8, 7]],
        [[[5, 5, 1], 2], [5, 5]],
    ],
)

_program(
    "strip_affixes",
    "Strip affixes\n\nInput:\n    word: A string\n    prefixes: A list of non-empty prefixes to try, in order\n    suffixes: A list of non-empty suffixes to try, in order\n\nOutput:\n    word without the first prefix and then the first suffix it has, each only if something is left",
    """
def strip_affixes(word, prefixes, suffixes):
    for p in prefixes:
        if word.startswith(p) and len(word) > len(p):
            word = word[len(p):]
            break
    for s in suffixes:
        if word.endswith(s) and len(word) > len(s):
            word = word[:-len(s)]
            break
    return word
""",
    ("word = word[len(p):]", "word = word[:len(p)]"),
    [
        [["unhappiness", ["un", "dis"], ["ness", "ly"]], "happi"],
        [["kindly", ["un"], ["ly"]], "kind"],
        [["dislike", ["dis"], []], "like"],
        [["un", ["un"], []], "un"],
        [["quickly", [], ["ly"]], "quick"],
        [["rerun", ["re"], ["un"]], "r"],
    ],
)

_program(
    "kth_largest_distinct",
    "Kth largest distinct value\n\nInput:\n    nums: A list of ints\n    k: A rank, 1 for the largest\n\nOutput:\n    The kth largest of the distinct values in nums, or None if there are fewer than k",
    """
def kth_largest_distinct(nums, k):
    values = sorted(set(nums), reverse=True)
    if k < 1 or k > len(values):
        return None
    return values[k - 1]
""",
    ("sorted(set(nums), reverse=True)", "sorted(nums, reverse=True)"),
    [
        [[[3, 1, 2], 2], 2],
        [[[3, 3, 2, 1], 2], 2],
        [[[5, 5], 2], None],
        [[[], 1], None],
        [[[4, 1, 4, 2], 1], 4],
        [[[4, 1, 4, 2], 3], 1],
        [[[7, 8], 0], None],
    ],
)

_program(
    "bfs_shortest_path",
    "Shortest path by breadth-first search\n\nInput:\n    graph: A dict from node to a list of neighbours (directed edges)\n    start: A node\n    goal: A node\n\nOutput:\n    A path from start to goal with fewest edges, as a list of nodes (neighbours tried in list order), or None if goal cannot be reached",
    """
def _build_path(parents, goal):
    path = [goal]
    while parents[path[-1]] is not None:
        path.append(parents[path[-1]])
    return path[::-1]


def bfs_shortest_path(graph, start, goal):
    parents = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        if node == goal:
            return _build_path(parents, goal)
        for nb in graph.get(node, []):
            if nb not in parents:
                parents[nb] = node
                queue.append(nb)
    return None
""",
    ("queue.pop(0)", "queue.pop()"),
    [
        [[{"a": ["b", "c"], "b": ["d"], "c": ["d"]}, "a", "d"], ["a", "b", "d"]],
        [[{"a": ["b"], "b": ["c"]}, "a", "c"], ["a", "b", "c"]],
        [[{"a": ["b"]}, "a", "a"], ["a"]],
        [[{"a": ["b"], "c": ["a"]}, "a", "c"], None],
        [[{"a": ["b", "c"], "b": ["c"]}, "a", "c"], ["a", "c"]],
        [[{"a": ["b", "c"], "b": ["g"], "c": ["x"], "x": ["g"]}, "a", "g"], ["a", "b", "g"]],
    ],
)

_program(
    "diagonal_sum",
    "Sum of both diagonals\n\nInput:\n    matrix: A square list of rows of numbers\n\nOutput:\n    The sum of the main and the anti-diagonal, the centre of an odd-sized matrix counted once",
    """
def diagonal_sum(matrix):
    n = len(matrix)
    total = 0
    for i in range(n):
        total += matrix[i][i] + matrix[i][n - 1 - i]
    if n % 2 == 1:
        total -= matrix[n // 2][n // 2]
    return total
""",
    ("    if n % 2 == 1:\n        total -= matrix[n // 2][n // 2]\n", ""),
    [
        [[[]], 0],
        [[[[5]]], 5],
        [[[[1, 2], [3, 4]]], 10],
        [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], 25],
        [[[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]], 68],
        [[[[0, 1, 0], [1, 0, 1], [0, 1, 0]]], 0],
    ],
)

# ---- set g ----------------------------------------------------------------------------------------------------

_SET = "g"

_program(
    "parse_duration",
    "Parse a duration\n\nInput:\n    text: A duration such as '1h30m' or '2d 4h 10s', in days (d), hours (h), minutes (m) and seconds (s); a trailing bare number counts as seconds\n\nOutput:\n    The duration in seconds, or None if text holds anything else",
    """
def parse_duration(text):
    units = {'d': 86400, 'h': 3600, 'm': 60, 's': 1}
    total = 0
    number = ''
    for char in text.strip():
        if char.isdigit():
            number += char
        elif char in units and number:
            total += int(number) * units[char]
            number = ''
        elif char != ' ':
            return None
    if number:
        total += int(number)
    return total
""",
    ("'d': 86400", "'d': 84600"),
    [
        [["1d2h"], 93600],
        [["2d"], 172800],
        [["1h30m"], 5400],
        [["1d 30s"], 86430],
        [["3d4h5m"], 273900],
        [["3x"], None],
        [["10d"], 864000],
    ],
)

_program(
    "slugify",
    "URL slug\n\nInput:\n    title: A string\n    max_length: The longest slug allowed (40 if not given)\n\nOutput:\n    The lower-cased runs of letters and digits of title joined by '-', cut to max_length without a trailing '-'",
    """
def slugify(title, max_length=40):
    parts = []
    word = ''
    for char in title.lower():
        if char.isalnum():
            word += char
        elif word:
            parts.append(word)
            word = ''
    if word:
        parts.append(word)
    slug = '-'.join(parts)
    return slug[:max_length].rstrip('-')
""",
    ("title.lower()", "title"),
    [
        [["Hello, World!"], "hello-world"],
        [["  Already-Slugged  "], "already-slugged"],
        [["a  b"], "a-b"],
        [["C++ & Python 3"], "c-python-3"],
        [[""], ""],
        [["Release Notes 2024"], "release-notes-2024"],
        [["One Two Three", 8], "one-two"],
        [["multiple   spaces here", 12], "multiple-spa"],
    ],
)

_program(
    "ordinal",
    "Ordinal number\n\nInput:\n    n: A non-negative int\n\nOutput:\n    n followed by its English ordinal suffix: '1st', '2nd', '3rd', '4th', '11th', '21st', ...",
    """
def ordinal(n):
    if 11 <= n % 100 <= 13:
        suffix = 'th'
    else:
        suffix = {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')
    return str(n) + suffix
""",
    ("11 <= n % 100 <= 13", "11 <= n % 10 <= 13"),
    [
        [[1], "1st"],
        [[2], "2nd"],
        [[3], "3rd"],
        [[4], "4th"],
        [[11], "11th"],
        [[112], "112th"],
        [[23], "23rd"],
        [[0], "0th"],
        [[101], "101st"],
    ],
)

_program(
    "valid_username",
    "Username check\n\nInput:\n    name: A string\n\nOutput:\n    True if name is 3 to 16 characters of letters, digits and underscores, starts with a letter, has no two underscores in a row and does not end with one",
    """
def valid_username(name):
    if not 3 <= len(name) <= 16:
        return False
    if not name[0].isalpha():
        return False
    for i, ch in enumerate(name):
        if not (ch.isalnum() or ch == '_'):
            return False
        if ch == '_' and i > 0 and name[i - 1] == '_':
            return False
    return not name.endswith('_')
""",
    ("ch.isalnum() or ch == '_'", "ch.isalnum()"),
    [
        [["alice"], True],
        [["al"], False],
        [["bob_smith"], True],
        [["9lives"], False],
        [["a__b"], False],
        [["user_"], False],
        [["john.doe"], False],
        [["abcdefghijklmnopq"], False],
        [["Player1"], True],
    ],
)

_program(
    "format_bytes",
    "Human-readable size\n\nInput:\n    n: A number of bytes (a non-negative int)\n\nOutput:\n    'n B' below 1024, else the size in the largest unit (KB, MB, GB, TB, each 1024 of the one before) that is at least 1, with one decimal",
    """
def format_bytes(n):
    units = ['B', 'KB', 'MB', 'GB', 'TB']
    size = n
    index = 0
    while size >= 1024 and index < len(units) - 1:
        size /= 1024
        index += 1
    if index == 0:
        return f'{n} B'
    return f'{size:.1f} {units[index]}'
""",
    ("size /= 1024", "size //= 1024"),
    [
        [[0], "0 B"],
        [[1023], "1023 B"],
        [[1024], "1.0 KB"],
        [[1536], "1.5 KB"],
        [[2560], "2.5 KB"],
        [[1572864], "1.5 MB"],
        [[3435973837], "3.2 GB"],
        [[1610612736], "1.5 GB"],
    ],
)

_program(
    "life_step",
    "One step of the Game of Life\n\nInput:\n    grid: A rectangular list of rows of 0 (dead) and 1 (alive); cells beyond the edge are dead\n\nOutput:\n    The next grid: a live cell with 2 or 3 live neighbours stays alive, a dead cell with exactly 3 comes alive, every other cell is dead",
    """
def life_step(grid):
    rows = len(grid)
    cols = len(grid[0]) if rows else 0
    result = []
    for r in range(rows):
        row = []
        for c in range(cols):
            alive = 0
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols:
                        alive += grid[r + dr][c + dc]
            if grid[r][c]:
                row.append(1 if alive in (2, 3) else 0)
            else:
                row.append(1 if alive == 3 else 0)
        result.append(row)
    return result
""",
    ("grid[r + dr][c + dc]", "grid[r + dc][c + dr]"),
    [
        [[[[0, 0, 0], [1, 1, 1], [0, 0, 0]]], [[0, 1, 0], [0, 1, 0], [0, 1, 0]]],
        [[[[1, 1], [1, 1]]], [[1, 1], [1, 1]]],
        [[[[1]]], [[0]]],
        [[[]], []],
        [[[[0, 1, 0], [0, 0, 0], [0, 0, 0]]], [[0, 0, 0], [0, 0, 0], [0, 0, 0]]],
        [[[[1, 1, 0], [1, 0, 0], [0, 0, 0]]], [[1, 1, 0], [1, 1, 0], [0, 0, 0]]],
        [[[[0, 1, 1, 0], [0, 1, 1, 0]]], [[0, 1, 1, 0], [0, 1, 1, 0]]],
    ],
)

_program(
    "grid_paths",
    "Paths through a grid\n\nInput:\n    grid: A rectangular list of rows of 0 (open) and 1 (blocked)\n\nOutput:\n    The number of paths from the top-left to the bottom-right cell that move only right or down through open cells",
    """
def grid_paths(grid):
    if not grid or grid[0][0] == 1:
        return 0
    rows, cols = len(grid), len(grid[0])
    ways = [[0] * cols for _ in range(rows)]
    ways[0][0] = 1
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] == 1:
                ways[r][c] = 0
                continue
            if r > 0:
                ways[r][c] += ways[r - 1][c]
            if c > 0:
                ways[r][c] += ways[r][c - 1]
    return ways[rows - 1][cols - 1]
""",
    ("if c > 0:", "if r > 0:"),
    [
        [[[[0, 0], [0, 0]]], 2],
        [[[[0, 0, 0], [0, 0, 0], [0, 0, 0]]], 6],
        [[[[0, 1], [0, 0]]], 1],
        [[[[1]]], 0],
        [[[[0, 0], [0, 0], [0, 0]]], 3],
        [[[[0, 0, 0]]], 1],
        [[[[0, 0, 0], [0, 1, 0], [0, 0, 0]]], 2],
        [[[]], 0],
    ],
)

_program(
    "interval_intersection",
    "Intersection of two interval lists\n\nInput:\n    a: A sorted list of disjoint closed intervals [start, end]\n    b: Another such list\n\nOutput:\n    The sorted list of the intervals where a and b overlap, a single shared point [x, x] included",
    """
def interval_intersection(a, b):
    i = j = 0
    result = []
    while i < len(a) and j < len(b):
        start = max(a[i][0], b[j][0])
        end = min(a[i][1], b[j][1])
        if start <= end:
            result.append([start, end])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return result
""",
    ("if start <= end:", "if start < end:"),
    [
        [[[[1, 3]], [[2, 4]]], [[2, 3]]],
        [[[], [[1, 2]]], []],
        [[[[1, 2]], [[3, 4]]], []],
        [[[[0, 2], [5, 10]], [[1, 5], [8, 12]]], [[1, 2], [5, 5], [8, 10]]],
        [[[[1, 10]], [[2, 3], [5, 6]]], [[2, 3], [5, 6]]],
        [[[[1, 4]], [[4, 6]]], [[4, 4]]],
    ],
)

_program(
    "free_slots",
    "Free time slots\n\nInput:\n    busy: A list of [start, end] busy intervals in minutes, in any order, possibly overlapping\n    day_start: The start of the day\n    day_end: The end of the day\n\nOutput:\n    The sorted list of the [start, end] gaps of non-zero length between day_start and day_end that no busy interval covers",
    """
def free_slots(busy, day_start, day_end):
    slots = []
    current = day_start
    for start, end in sorted(busy):
        if start > current:
            slots.append([current, min(start, day_end)])
        current = max(current, end)
        if current >= day_end:
            break
    if current < day_end:
        slots.append([current, day_end])
    return slots
""",
    ("if start > current:", "if start >= current:"),
    [
        [[[[60, 120]], 0, 480], [[0, 60], [120, 480]]],
        [[[[0, 100]], 0, 100], []],
        [[[[300, 360], [60, 120]], 0, 480], [[0, 60], [120, 300], [360, 480]]],
        [[[[10, 50], [20, 30]], 0, 60], [[0, 10], [50, 60]]],
        [[[[100, 150], [150, 180]], 90, 300], [[90, 100], [180, 300]]],
        [[[[0, 30], [30, 60]], 0, 120], [[60, 120]]],
        [[[[60, 120], [120, 200]], 60, 300], [[200, 300]]],
        [[[[0, 10]], 0, 50], [[10, 50]]],
    ],
)

_program(
    "version_compare",
    "Compare version strings\n\nInput:\n    a: A version such as '1.2.10'\n    b: Another version\n\nOutput:\n    -1 if a is older than b, 1 if it is newer, 0 if they are equal; missing trailing parts count as 0",
    """
def version_compare(a, b):
    left = [int(part) for part in a.split('.')]
    right = [int(part) for part in b.split('.')]
    length = max(len(left), len(right))
    left += [0] * (length - len(left))
    right += [0] * (length - len(right))
    for x, y in zip(left, right):
        if x != y:
            return 1 if x > y else -1
    return 0
""",
    ("    right += [0] * (length - len(right))\n", ""),
    [
        [["1.2.10", "1.2.9"], 1],
        [["1.0", "1.0.0"], 0],
        [["1.0.1", "1.0"], 1],
        [["2.0", "10.0"], -1],
        [["1.2", "1.2.1"], -1],
        [["3.4.5", "3.4.5"], 0],
        [["2", "1.9.9"], 1],
    ],
)

_program(
    "invert_mapping",
    "Invert a mapping\n\nInput:\n    mapping: A dict from string keys to string values\n\nOutput:\n    A dict from each value to the sorted list of the keys that map to it",
    """
def invert_mapping(mapping):
    inverted = {}
    for key, value in mapping.items():
        inverted.setdefault(value, []).append(key)
    for keys in inverted.values():
        keys.sort()
    return inverted
""",
    ("inverted.setdefault(value, []).append(key)", "inverted.setdefault(value, []).extend(key)"),
    [
        [[{"a": "x", "b": "y", "c": "x"}], {"x": ["a", "c"], "y": ["b"]}],
        [[{"apple": "fruit", "kale": "veg", "fig": "fruit"}], {"fruit": ["apple", "fig"], "veg": ["kale"]}],
        [[{}], {}],
        [[{"k": "v"}], {"v": ["k"]}],
        [[{"b": "1", "a": "1"}], {"1": ["a", "b"]}],
        [[{"id": "7", "no": "8"}], {"7": ["id"], "8": ["no"]}],
    ],
)

_program(
    "mask_card",
    "Mask a card number\n\nInput:\n    number: A string of digits, possibly with spaces or dashes\n\nOutput:\n    number with every digit but the last four replaced by '*', other characters kept",
    """
def mask_card(number):
    digits = [i for i, ch in enumerate(number) if ch.isdigit()]
    chars = list(number)
    for k in range(len(digits) - 4):
        chars[digits[k]] = '*'
    return ''.join(chars)
""",
    ("range(len(digits) - 4)", "range(len(digits) - 3)"),
    [
        [["4111 1111 1111 1234"], "**** **** **** 1234"],
        [["1234"], "1234"],
        [["12"], "12"],
        [["12345"], "*2345"],
        [["5500-0000-0000-0004"], "****-****-****-0004"],
        [[""], ""],
        [["ab12"], "ab12"],
    ],
)

_program(
    "wildcard_match",
    "Wildcard matching\n\nInput:\n    pattern: A string where '?' matches any one character and '*' any run of characters, the empty one included\n    text: A string\n\nOutput:\n    True if pattern matches the whole of text",
    """
def wildcard_match(pattern, text):
    m, n = len(pattern), len(text)
    match = [[False] * (n + 1) for _ in range(m + 1)]
    match[0][0] = True
    for i in range(1, m + 1):
        if pattern[i - 1] == '*':
            match[i][0] = match[i - 1][0]
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            if pattern[i - 1] == '*':
                match[i][j] = match[i - 1][j] or match[i][j - 1]
            elif pattern[i - 1] == '?' or pattern[i - 1] == text[j - 1]:
                match[i][j] = match[i - 1][j - 1]
    return match[m][n]
""",
    ("pattern[i - 1] == text[j - 1]", "pattern[i - 1] == text[i - 1]"),
    [
        [["a?c", "abc"], True],
        [["*", ""], True],
        [["*.py", "main.py"], True],
        [["a*b*c", "axxbyc"], True],
        [["a*c", "abbc"], True],
        [["*ing", "running"], True],
        [["ab*cd", "abxxcd"], True],
        [["*.txt", "notes.md"], False],
    ],
)

_program(
    "zigzag",
    "Zigzag reading\n\nInput:\n    text: A string\n    rows: A positive number of rows\n\nOutput:\n    text written down and up in a zigzag over rows rows, then read row by row",
    """
def zigzag(text, rows):
    if rows == 1 or rows >= len(text):
        return text
    lines = [''] * rows
    row, step = 0, 1
    for ch in text:
        lines[row] += ch
        if row == 0:
            step = 1
        elif row == rows - 1:
            step = -1
        row += step
    return ''.join(lines)
""",
    ("if rows == 1 or rows >= len(text):", "if rows >= len(text):"),
    [
        [["PAYPALISHIRING", 3], "PAHNAPLSIIGYIR"],
        [["PAYPALISHIRING", 4], "PINALSIGYAHRPI"],
        [["abc", 1], "abc"],
        [["ab", 5], "ab"],
        [["abcdef", 2], "acebdf"],
        [["", 3], ""],
        [["x", 1], "x"],
    ],
)

_program(
    "valid_ipv4",
    "IPv4 address check\n\nInput:\n    address: A string\n\nOutput:\n    True if address is four dot-separated decimal numbers from 0 to 255 without leading zeros",
    """
def valid_ipv4(address):
    parts = address.split('.')
    if len(parts) != 4:
        return False
    for part in parts:
        if not part.isdigit():
            return False
        if len(part) > 1 and part[0] == '0':
            return False
        if int(part) > 255:
            return False
    return True
""",
    ("if not part.isdigit():", "if not part.isalnum():"),
    [
        [["192.168.0.1"], True],
        [["255.255.255.255"], True],
        [["256.1.1.1"], False],
        [["1.2.3.x"], False],
        [["a.b.c.d"], False],
        [["10.0.0.1a"], False],
        [["ff.1.2.3"], False],
    ],
)

_program(
    "min_stack",
    "Stack with minimum\n\nInput:\n    ops: A list of operations: 'push N' (N an int), 'pop' (nothing happens on an empty stack) or 'min'\n\nOutput:\n    The list of the answers to the 'min' operations: the smallest value on the stack, or None if it is empty",
    """
def min_stack(ops):
    stack = []
    mins = []
    output = []
    for op in ops:
        if op.startswith('push '):
            value = int(op[5:])
            stack.append(value)
            mins.append(value if not mins else min(value, mins[-1]))
        elif op == 'pop':
            if stack:
                stack.pop()
                mins.pop()
        elif op == 'min':
            output.append(mins[-1] if mins else None)
    return output
""",
    ("                mins.pop()\n", ""),
    [
        [[["push 3", "push 1", "min", "pop", "min"]], [1, 3]],
        [[["min"]], [None]],
        [[["push 5", "push 7", "min", "pop", "min"]], [5, 5]],
        [[["push 2", "pop", "min"]], [None]],
        [[["push -1", "push 4", "push -3", "min", "pop", "pop", "min"]], [-3, -1]],
        [[["pop", "push 8", "min"]], [8]],
    ],
)

_program(
    "lru_misses",
    "LRU cache misses\n\nInput:\n    capacity: The number of keys the cache holds\n    accesses: A list of keys in the order they are read\n\nOutput:\n    How many reads miss a cache that, when full, evicts the least recently used key",
    """
def lru_misses(capacity, accesses):
    if capacity <= 0:
        return len(accesses)
    cache = []
    misses = 0
    for key in accesses:
        if key in cache:
            cache.remove(key)
        else:
            misses += 1
            if len(cache) == capacity:
                cache = cache[1:]
        cache.append(key)
    return misses
""",
    ("cache = cache[1:]", "cache = cache[:-1]"),
    [
        [[2, [1, 2, 1, 3, 2]], 4],
        [[1, [1, 1, 2, 2, 1]], 3],
        [[0, [1, 2]], 2],
        [[2, []], 0],
        [[2, [1, 2, 3, 1]], 4],
        [[3, [1, 2, 3, 1, 4, 2, 5, 1]], 7],
        [[3, [1, 2, 3, 4, 1, 2]], 6],
        [[2, ["a", "b", "c", "a", "b"]], 5],
    ],
)

_program(
    "tokenize",
    "Tokenize an arithmetic expression\n\nInput:\n    expr: A string of non-negative integers, the operators + - * /, parentheses and spaces\n\nOutput:\n    The list of tokens (numbers as strings), without the spaces, or None if expr holds any other character",
    """
def tokenize(expr):
    tokens = []
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch.isdigit():
            j = i
            while j < len(expr) and expr[j].isdigit():
                j += 1
            tokens.append(expr[i:j])
            i = j
            continue
        if ch in '+-*/()':
            tokens.append(ch)
        elif not ch.isspace():
            return None
        i += 1
    return tokens
""",
    ("tokens.append(expr[i:j])", "tokens.append(expr[i:j + 1])"),
    [
        [["1+2"], ["1", "+", "2"]],
        [["12 * (3 - 4)"], ["12", "*", "(", "3", "-", "4", ")"]],
        [[""], []],
        [["7"], ["7"]],
        [["2 $ 3"], None],
        [["100/25"], ["100", "/", "25"]],
        [["(4)"], ["(", "4", ")"]],
    ],
)

_program(
    "justify",
    "Justify a line\n\nInput:\n    words: A non-empty list of words\n    width: The line width, at least the words' total length plus one space between each two\n\nOutput:\n    The words spread over exactly width characters: the spaces shared out evenly between the words, the leftmost gaps taking one more when they do not divide; a single word is padded on the right",
    """
def justify(words, width):
    if len(words) == 1:
        return words[0].ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(w) for w in words)
    base, extra = divmod(spaces, gaps)
    line = ''
    for i, word in enumerate(words[:-1]):
        line += word + ' ' * (base + (1 if i < extra else 0))
    return line + words[-1]
""",
    ("divmod(spaces, gaps)", "divmod(gaps, spaces)"),
    [
        [[["a", "b"], 5], "a   b"],
        [[["hello"], 8], "hello   "],
        [[["this", "is", "an"], 10], "this is an"],
        [[["the", "quick", "fox"], 16], "the   quick  fox"],
        [[["ab", "cd"], 5], "ab cd"],
        [[["a", "bb", "c"], 9], "a   bb  c"],
        [[["to", "be", "or", "not"], 16], "to   be  or  not"],
    ],
)

_program(
    "column_name",
    "Spreadsheet column name\n\nInput:\n    n: A non-negative int\n\nOutput:\n    The name of the n-th spreadsheet column: 1 is 'A', 26 is 'Z', 27 is 'AA', 28 is 'AB', ...; '' for 0",
    """
def column_name(n):
    name = ''
    while n > 0:
        n, rem = divmod(n - 1, 26)
        name = chr(ord('A') + rem) + name
    return name
""",
    ("divmod(n - 1, 26)", "divmod(n + 1, 26)"),
    [
        [[1], "A"],
        [[26], "Z"],
        [[27], "AA"],
        [[52], "AZ"],
        [[702], "ZZ"],
        [[703], "AAA"],
        [[0], ""],
    ],
)

_program(
    "pivot_index",
    "Balance point of a list\n\nInput:\n    nums: A list of ints\n\nOutput:\n    The first index i where the sum of the values left of i equals the sum of those right of i, or -1 if there is none",
    """
def pivot_index(nums):
    total = sum(nums)
    left = 0
    for i, value in enumerate(nums):
        if left == total - left - value:
            return i
        left += value
    return -1
""",
    ("left == total - left - value", "left == total - left"),
    [
        [[[1, 7, 3, 6, 5, 6]], 3],
        [[[1, 2, 3]], -1],
        [[[2, 1, -1]], 0],
        [[[]], -1],
        [[[0]], 0],
        [[[1, -1, 5]], 2],
        [[[4, 0, 4]], 1],
    ],
)

_program(
    "bowling_score",
    "Ten-pin bowling score\n\nInput:\n    rolls: The pins knocked down by each roll of a complete game of ten frames, bonus rolls of the tenth frame included\n\nOutput:\n    The total score: a strike scores 10 plus the next two rolls, a spare 10 plus the next roll, any other frame its pins",
    """
def bowling_score(rolls):
    score = 0
    i = 0
    for _ in range(10):
        if rolls[i] == 10:
            score += 10 + rolls[i + 1] + rolls[i + 2]
            i += 1
        elif rolls[i] + rolls[i + 1] == 10:
            score += 10 + rolls[i + 2]
            i += 2
        else:
            score += rolls[i] + rolls[i + 1]
            i += 2
    return score
""",
    ("for _ in range(10):", "for _ in range(1, 10):"),
    [
        [[[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], 0],
        [[[10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10]], 300],
        [[[9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9, 1, 9]], 190],
        [[[3, 4, 3, 4, 3, 4, 3, 4, 3, 4, 3, 4, 3, 4, 3, 4, 3, 4, 3, 4]], 70],
        [[[10, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], 24],
        [[[5, 5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], 16],
        [[[10, 10, 10, 10, 10, 10, 10, 10, 10, 5, 5, 10]], 275],
    ],
)

# ---- set h ----------------------------------------------------------------------------------------------------

_SET = "h"

_program(
    "shoelace_area2",
    "Twice the area of a polygon\n\nInput:\n    points: The polygon's corners as [x, y] int pairs, in order around its boundary\n\nOutput:\n    Twice its area, an int (0 for fewer than three corners)",
    """
def shoelace_area2(points):
    total = 0
    n = len(points)
    for i in range(n):
        x1, y1 = points[i]
        x2, y2 = points[(i + 1) % n]
        total += x1 * y2 - x2 * y1
    return abs(total)
""",
    ("x1 * y2 - x2 * y1", "x1 * y2 + x2 * y1"),
    [
        [[[[0, 0], [2, 0], [2, 2], [0, 2]]], 8],
        [[[[1, 1], [5, 1], [1, 4]]], 12],
        [[[[1, 1], [1, 4], [5, 1]]], 12],
        [[[]], 0],
        [[[[1, 1], [2, 2]]], 0],
        [[[[0, 0], [3, 0], [3, 1], [1, 1], [1, 3], [0, 3]]], 10],
        [[[[-2, -1], [2, -1], [0, 3]]], 16],
    ],
)

_program(
    "isbn10_check_digit",
    "ISBN-10 check digit\n\nInput:\n    digits: The first nine digits of an ISBN-10, as a string\n\nOutput:\n    The check character, '0' to '9' or 'X'",
    """
def isbn10_check_digit(digits):
    total = 0
    for i, char in enumerate(digits):
        total += (10 - i) * int(char)
    check = (11 - total % 11) % 11
    return 'X' if check == 10 else str(check)
""",
    ("(10 - i)", "(10 + i)"),
    [
        [["030640615"], "2"],
        [["080442957"], "X"],
        [["000000000"], "0"],
        [["123456789"], "X"],
        [["014044911"], "6"],
        [["316148410"], "X"],
    ],
)

_program(
    "neighbor_sums",
    "Neighbour sums\n\nInput:\n    grid: A rectangular list of lists of ints\n\nOutput:\n    A grid of the same shape whose each cell is the sum of the cells above, below, left and right of it in grid",
    """
def neighbor_sums(grid):
    rows = len(grid)
    cols = len(grid[0]) if rows else 0
    result = []
    for i in range(rows):
        row = []
        for j in range(cols):
            total = 0
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                ni, nj = i + di, j + dj
                if 0 <= ni < rows and 0 <= nj < cols:
                    total += grid[ni][nj]
            row.append(total)
        result.append(row)
    return result
""",
    ("total += grid[ni][nj]", "total += grid[ni][j]"),
    [
        [[[]], []],
        [[[[5]]], [[0]]],
        [[[[1, 2]]], [[2, 1]]],
        [[[[1, 2], [3, 4]]], [[5, 5], [5, 5]]],
        [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], [[6, 9, 8], [13, 20, 17], [12, 21, 14]]],
        [[[[0, 1, 0], [1, 0, 1]]], [[2, 0, 2], [0, 3, 0]]],
    ],
)

_program(
    "longest_win_streak",
    "Longest winning streak\n\nInput:\n    results: A string of game results, one of 'W', 'L' or 'D' per game\n\nOutput:\n    The length of the longest run of consecutive 'W's",
    """
def longest_win_streak(results):
    best = 0
    current = 0
    for result in results:
        if result == 'W':
            current += 1
            best = max(best, current)
        else:
            current = 0
    return best
""",
    ("return best", "return current"),
    [[["WWLW"], 2], [["LWWW"], 3], [[""], 0], [["WLWWL"], 2], [["LLD"], 0], [["WWWDW"], 3], [["WWWLLWD"], 3]],
)

_program(
    "visible_from_left",
    "Buildings seen from the left\n\nInput:\n    heights: A list of building heights (ints), west to east\n\nOutput:\n    The indices of the buildings strictly taller than every building west of them",
    """
def visible_from_left(heights):
    visible = []
    tallest = None
    for i, height in enumerate(heights):
        if tallest is None or height > tallest:
            visible.append(i)
            tallest = height
    return visible
""",
    ("height > tallest", "height >= tallest"),
    [
        [[[3, 3, 2]], [0]],
        [[[1, 2, 3]], [0, 1, 2]],
        [[[]], []],
        [[[5, 1, 5, 6]], [0, 3]],
        [[[2, 2, 2, 2]], [0]],
        [[[4, 2, 7, 7, 1, 8]], [0, 2, 5]],
        [[[-3, -5, -1]], [0, 2]],
    ],
)

_program(
    "first_fit_bins",
    "First-fit bin packing\n\nInput:\n    items: A list of positive int sizes, in arrival order\n    capacity: The capacity of every bin, at least the largest item\n\nOutput:\n    The load of each opened bin, in opening order, when each item goes into the first bin it fits in",
    """
def first_fit_bins(items, capacity):
    loads = []
    for item in items:
        for k in range(len(loads)):
            if loads[k] + item <= capacity:
                loads[k] += item
                break
        else:
            loads.append(item)
    return loads
""",
    ("loads[k] + item <= capacity", "loads[k] + item < capacity"),
    [
        [[[5, 5], 10], [10]],
        [[[4, 3, 2], 10], [9]],
        [[[6, 6, 6], 10], [6, 6, 6]],
        [[[7, 3, 5, 5], 10], [10, 10]],
        [[[], 5], []],
        [[[2, 8, 1, 9], 10], [10, 10]],
        [[[3, 3, 3, 3], 6], [6, 6]],
    ],
)

_program(
    "count_leap_years",
    "Leap years in a span\n\nInput:\n    start: A year\n    end: A year, not before start\n\nOutput:\n    How many Gregorian leap years lie from start to end, both included",
    """
def count_leap_years(start, end):
    count = 0
    for year in range(start, end + 1):
        if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0):
            count += 1
    return count
""",
    (" or year % 400 == 0", ""),
    [
        [[2001, 2003], 0],
        [[2004, 2004], 1],
        [[1896, 1904], 2],
        [[1999, 2001], 1],
        [[1990, 2020], 8],
        [[2100, 2100], 0],
        [[1600, 1600], 1],
    ],
)

_program(
    "is_hex_color",
    "Hex colour check\n\nInput:\n    text: A string\n\nOutput:\n    True if text is '#' followed by exactly 3 or 6 hexadecimal digits, else False",
    """
def is_hex_color(text):
    hex_digits = set('0123456789abcdefABCDEF')
    if not text.startswith('#'):
        return False
    digits = text[1:]
    return len(digits) in (3, 6) and all(c in hex_digits for c in digits)
""",
    ("len(digits) in (3, 6) and ", ""),
    [
        [["#fff"], True],
        [["#A1B2C3"], True],
        [["fff"], False],
        [["#ggg"], False],
        [["#12345"], False],
        [["#"], False],
        [["#1234567"], False],
    ],
)

_program(
    "kmer_counts",
    "Substring counts\n\nInput:\n    text: A string\n    k: A positive int\n\nOutput:\n    A dict from each length-k substring of text to how many times it occurs (overlaps counted)",
    """
def kmer_counts(text, k):
    counts = {}
    for i in range(len(text) - k + 1):
        piece = text[i:i + k]
        counts[piece] = counts.get(piece, 0) + 1
    return counts
""",
    ("range(len(text) - k + 1)", "range(len(text) - k)"),
    [
        [["abab", 2], {"ab": 2, "ba": 1}],
        [["aaaa", 2], {"aa": 3}],
        [["abc", 3], {"abc": 1}],
        [["ab", 3], {}],
        [["banana", 3], {"ban": 1, "ana": 2, "nan": 1}],
        [["xyz", 1], {"x": 1, "y": 1, "z": 1}],
    ],
)

_program(
    "digit_tally",
    "Digit tally\n\nInput:\n    n: A positive int\n    digit: An int from 0 to 9\n\nOutput:\n    How many times digit is written when writing out all the numbers from 1 to n",
    """
def digit_tally(n, digit):
    target = str(digit)
    count = 0
    for number in range(1, n + 1):
        count += str(number).count(target)
    return count
""",
    ("range(1, n + 1)", "range(1, n)"),
    [[[13, 1], 6], [[9, 9], 1], [[10, 0], 1], [[20, 2], 3], [[5, 7], 0], [[100, 0], 11]],
)

_program(
    "line_points",
    "Points on a straight segment\n\nInput:\n    start: An [x, y] int point\n    end: An [x, y] int point on the same row, column or 45-degree diagonal as start\n\nOutput:\n    The list of [x, y] points from start to end, both included",
    """
def line_points(start, end):
    x, y = start
    x1, y1 = end
    dx = (x1 > x) - (x1 < x)
    dy = (y1 > y) - (y1 < y)
    points = [[x, y]]
    while [x, y] != [x1, y1]:
        x += dx
        y += dy
        points.append([x, y])
    return points
""",
    ("points.append([x, y])", "points.append([y, x])"),
    [
        [[[0, 0], [3, 0]], [[0, 0], [1, 0], [2, 0], [3, 0]]],
        [[[2, 2], [2, 2]], [[2, 2]]],
        [[[1, 5], [1, 2]], [[1, 5], [1, 4], [1, 3], [1, 2]]],
        [[[0, 0], [2, 2]], [[0, 0], [1, 1], [2, 2]]],
        [[[3, 0], [0, 3]], [[3, 0], [2, 1], [1, 2], [0, 3]]],
        [[[-1, 4], [2, 7]], [[-1, 4], [0, 5], [1, 6], [2, 7]]],
    ],
)

_program(
    "shift_minutes",
    "Shift length\n\nInput:\n    start: A 24-hour clock time 'HH:MM'\n    end: A 24-hour clock time 'HH:MM', possibly on the next day\n\nOutput:\n    The minutes from start to end, from 0 to 1439",
    """
def shift_minutes(start, end):
    def to_minutes(clock):
        hours, minutes = clock.split(':')
        return int(hours) * 60 + int(minutes)

    return (to_minutes(end) - to_minutes(start)) % 1440
""",
    ("to_minutes(end) - to_minutes(start)", "to_minutes(start) - to_minutes(end)"),
    [
        [["09:00", "17:30"], 510],
        [["22:00", "06:00"], 480],
        [["08:00", "20:00"], 720],
        [["12:15", "12:15"], 0],
        [["23:59", "00:01"], 2],
        [["00:00", "23:45"], 1425],
    ],
)

_program(
    "ellipsize",
    "Shorten with an ellipsis\n\nInput:\n    text: A string\n    limit: A non-negative int\n\nOutput:\n    text if it has at most limit characters, else its start with trailing spaces removed plus '...', at most limit characters in all",
    """
def ellipsize(text, limit):
    if len(text) <= limit:
        return text
    if limit <= 3:
        return '.' * limit
    return text[:limit - 3].rstrip() + '...'
""",
    ("text[:limit - 3]", "text[:limit]"),
    [
        [["hello", 10], "hello"],
        [["hello world", 8], "hello..."],
        [["abcdef", 2], ".."],
        [["abcdefgh", 6], "abc..."],
        [["a b c d e", 5], "a..."],
        [["truncate me please", 10], "truncat..."],
    ],
)

_program(
    "perfect_shuffle",
    "Riffle shuffle\n\nInput:\n    cards: A list\n\nOutput:\n    The cards of the first half (the longer one if the count is odd) interleaved with those of the second half, starting with the first card",
    """
def perfect_shuffle(cards):
    half = (len(cards) + 1) // 2
    left = cards[:half]
    right = cards[half:]
    result = []
    for i in range(half):
        result.append(left[i])
        if i < len(right):
            result.append(right[i])
    return result
""",
    ("right = cards[half:]", "right = cards[-half:]"),
    [
        [[[1, 2, 3, 4]], [1, 3, 2, 4]],
        [[[1, 2, 3, 4, 5]], [1, 4, 2, 5, 3]],
        [[[]], []],
        [[["a"]], ["a"]],
        [[[1, 2, 3, 4, 5, 6]], [1, 4, 2, 5, 3, 6]],
        [[["x", "y"]], ["x", "y"]],
        [[[9, 8, 7]], [9, 7, 8]],
    ],
)

_program(
    "utc_clock",
    "Weekday and time of a timestamp\n\nInput:\n    timestamp: Seconds since 1970-01-01 00:00 UTC (a Thursday), an int, possibly negative\n\nOutput:\n    The UTC weekday and time as 'Weekday HH:MM'",
    """
def utc_clock(timestamp):
    names = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']
    days, seconds = divmod(timestamp, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes = seconds // 60
    weekday = names[(days + 3) % 7]
    return f'{weekday} {hours:02d}:{minutes:02d}'
""",
    ("(days + 3) % 7", "(days + 4) % 7"),
    [
        [[0], "Thursday 00:00"],
        [[345600], "Monday 00:00"],
        [[1700000000], "Tuesday 22:13"],
        [[-1], "Wednesday 23:59"],
        [[90061], "Friday 01:01"],
        [[951782400], "Tuesday 00:00"],
    ],
)

_program(
    "reverse_complement",
    "DNA reverse complement\n\nInput:\n    seq: A DNA string of A, C, G and T, in either case\n\nOutput:\n    The upper-case reverse complement of seq, with N for any other character",
    """
def reverse_complement(seq):
    pairs = {'A': 'T', 'T': 'A', 'C': 'G', 'G': 'C'}
    result = []
    for base in reversed(seq.upper()):
        result.append(pairs.get(base, 'N'))
    return ''.join(result)
""",
    ("'G': 'C'", "'G': 'G'"),
    [
        [["ATGC"], "GCAT"],
        [[""], ""],
        [["AATT"], "AATT"],
        [["acgt"], "ACGT"],
        [["GGN"], "NCC"],
        [["GATTACA"], "TGTAATC"],
    ],
)

_program(
    "knight_distance",
    "Knight moves on a square board\n\nInput:\n    size: The side of the board\n    start: The [row, col] of the knight\n    target: A [row, col] on the board\n\nOutput:\n    The fewest knight moves from start to target, or -1 if it cannot be reached",
    """
def knight_distance(size, start, target):
    moves = [(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)]
    dist = {tuple(start): 0}
    queue = [tuple(start)]
    while queue:
        r, c = queue.pop(0)
        if [r, c] == target:
            return dist[(r, c)]
        for dr, dc in moves:
            nxt = (r + dr, c + dc)
            if 0 <= nxt[0] < size and 0 <= nxt[1] < size and nxt not in dist:
                dist[nxt] = dist[(r, c)] + 1
                queue.append(nxt)
    return -1
""",
    ("queue.pop(0)", "queue.pop()"),
    [
        [[8, [0, 0], [0, 0]], 0],
        [[8, [0, 0], [1, 2]], 1],
        [[8, [0, 0], [7, 7]], 6],
        [[3, [0, 0], [1, 1]], -1],
        [[8, [0, 0], [2, 2]], 4],
        [[5, [0, 0], [4, 4]], 4],
        [[8, [3, 3], [4, 3]], 3],
    ],
)

_program(
    "hashtags",
    "Hashtags in a post\n\nInput:\n    text: A string of words separated by whitespace\n\nOutput:\n    The distinct hashtags, lower-cased, without the '#' and without trailing . , ! or ?, in order of first use",
    """
def hashtags(text):
    tags = []
    for word in text.split():
        if word.startswith('#') and len(word) > 1:
            tag = word[1:].rstrip('.,!?').lower()
            if tag and tag not in tags:
                tags.append(tag)
    return tags
""",
    (".rstrip('.,!?')", ".lstrip('.,!?')"),
    [
        [[""], []],
        [["#Python is fun #python"], ["python"]],
        [["love #cats and #dogs"], ["cats", "dogs"]],
        [["#a #b #a"], ["a", "b"]],
        [["great day! #sunny."], ["sunny"]],
        [["#wow!! #wow"], ["wow"]],
    ],
)

_program(
    "compound_cents",
    "Compound interest in cents\n\nInput:\n    principal: A balance in cents\n    rate_bp: A yearly interest rate in basis points (hundredths of a percent)\n    years: A non-negative int\n\nOutput:\n    The balance at the start and after each year, each year's interest rounded to the nearest cent, halves up",
    """
def compound_cents(principal, rate_bp, years):
    balance = principal
    history = [balance]
    for _ in range(years):
        interest = (balance * rate_bp + 5000) // 10000
        balance += interest
        history.append(balance)
    return history
""",
    ("(balance * rate_bp + 5000) // 10000", "balance * rate_bp // 10000"),
    [
        [[10000, 500, 2], [10000, 10500, 11025]],
        [[10000, 0, 3], [10000, 10000, 10000, 10000]],
        [[999, 500, 1], [999, 1049]],
        [[100000, 375, 3], [100000, 103750, 107641, 111678]],
        [[1, 5000, 2], [1, 2, 3]],
        [[2999, 250, 3], [2999, 3074, 3151, 3230]],
    ],
)

_program(
    "king_tour_moves",
    "King's route length\n\nInput:\n    squares: A list of chess squares such as 'e4', in visiting order\n\nOutput:\n    The fewest king moves needed to visit them in that order",
    """
def king_tour_moves(squares):
    def coords(square):
        return ord(square[0]) - ord('a'), int(square[1]) - 1

    total = 0
    for a, b in zip(squares, squares[1:]):
        (x1, y1), (x2, y2) = coords(a), coords(b)
        total += max(abs(x2 - x1), abs(y2 - y1))
    return total
""",
    ("abs(y2 - y1)", "y2 - y1"),
    [
        [[["e1"]], 0],
        [[[]], 0],
        [[["a1", "h8"]], 7],
        [[["a1", "c2", "c5"]], 5],
        [[["e4", "e1"]], 3],
        [[["a8", "b1", "h1"]], 13],
        [[["d4", "e5", "d4"]], 2],
    ],
)

_program(
    "paragraphs",
    "Split lines into paragraphs\n\nInput:\n    lines: A list of strings; blank (or whitespace-only) lines separate paragraphs\n\nOutput:\n    A list of paragraphs, each the list of its lines with surrounding whitespace removed",
    """
def paragraphs(lines):
    groups = []
    current = []
    for line in lines:
        if line.strip():
            current.append(line.strip())
        elif current:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups
""",
    ("groups.append(current)\n            current = []", "groups.append(current)"),
    [
        [[["a", "b", "", "c"]], [["a", "b"], ["c"]]],
        [[[]], []],
        [[["x"]], [["x"]]],
        [[["", "", " x ", " "]], [["x"]]],
        [[["p", "", "", "q", "r", "", "s"]], [["p"], ["q", "r"], ["s"]]],
        [[["one", "  ", "two"]], [["one"], ["two"]]],
    ],
)

_program(
    "fill_orders",
    "Fill orders from stock\n\nInput:\n    stock: A dict from item name to the count in stock\n    orders: A list of [item, quantity] pairs, quantity a positive int, in arrival order\n\nOutput:\n    A list of bools, True for each order filled in full from what is left in stock (it is then taken), False otherwise",
    """
def fill_orders(stock, orders):
    remaining = dict(stock)
    filled = []
    for item, qty in orders:
        if remaining.get(item, 0) >= qty:
            remaining[item] -= qty
            filled.append(True)
        else:
            filled.append(False)
    return filled
""",
    ("            remaining[item] -= qty\n", ""),
    [
        [[{"apple": 5, "pear": 2}, [["apple", 3], ["apple", 3]]], [True, False]],
        [[{"apple": 5, "pear": 2}, [["pear", 1], ["apple", 5]]], [True, True]],
        [[{}, []], []],
        [[{"a": 1}, [["b", 1]]], [False]],
        [[{"x": 4}, [["x", 2], ["x", 2], ["x", 1]]], [True, True, False]],
        [[{"x": 4, "y": 1}, [["y", 1], ["x", 5], ["x", 4]]], [True, False, True]],
    ],
)


def write_repo(out: Path, programs: list[tuple[str, str, str, tuple[str, str], list[list[object]]]]) -> None:
    """The programs as a git repository: python_programs/ (buggy), correct_python_programs/, json_testcases/."""
    for sub in ("python_programs", "correct_python_programs", "json_testcases"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for name, doc, code, (old, new), tests in programs:
        if code.count(old) != 1:
            raise ValueError(f"{name}: the bug site must occur exactly once")
        doc_text = '\n\n"""\n' + doc + '\n"""\n'
        (out / "correct_python_programs" / f"{name}.py").write_text(code + doc_text)
        (out / "python_programs" / f"{name}.py").write_text(code.replace(old, new) + doc_text)
        (out / "json_testcases" / f"{name}.json").write_text("".join(json.dumps(t) + "\n" for t in tests))
    git = ["git", "-c", "user.name=reprobot", "-c", "user.email=reprobot@localhost", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q"], cwd=out, check=True)
    subprocess.run([*git, "add", "."], cwd=out, check=True)
    subprocess.run([*git, "commit", "-qm", "made-up algorithm bugs"], cwd=out, check=True)


def main(argv: list[str] | None = None) -> int:
    """Write one set's repository."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", choices=sorted(PROGRAMS), required=True)
    parser.add_argument("out", type=Path, help="an empty or new folder")
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"{args.out} is not empty", file=sys.stderr)
        return 2
    write_repo(args.out, PROGRAMS[args.set])
    print(f"wrote {len(PROGRAMS[args.set])} programs of set {args.set} into {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: MIT
"""The next ten fire times of cron-next (daemon/util/cron.c) against python3-croniter's.

Usage: cron-oracle.py CRON_NEXT. Every expression of a fixed list and of a generated one (fixed
seed) is run from several start times in each zone, and each of the ten fire times is counted
from the one before, as the daemon does. Expressions croniter refuses must be refused too.

croniter around DST (1.3.5, with zoneinfo): its search walks the wall clock and reads the wall time
it finds with fold=0 (a skipped 02:30 is 03:30 after the change; a repeated 02:30 is the first
one). Two things then go wrong, and there the expected time is croniter's own search, taken
past the start:
 - "back": from the last minute of a repeated hour (or from inside its second pass) the search
   starts on the repeated wall clock and returns its first pass, before the start;
 - "moved": get_next shifts a result whose UTC offset differs from the start's by the difference
   once the result is "past midnight", so a daily 03:00 fires at 04:00 the day after fall-back.
Apart from DST, its day-of-month step takes a day the month lacks (31 in February) as reachable
and lands in the next month past its first days ("0 0 1,31 * *" from Feb 29 2028 gives Mar 31,
not Mar 1): there ours must be an earlier fire time, checked on the wall clock ("skipped").
"""
import datetime
import os
import random
import subprocess
import sys
from zoneinfo import ZoneInfo

from croniter import croniter, CroniterBadCronError, CroniterBadDateError

FIVE_YEARS = 1827 * 86400
COUNT = 10

FIXED = [
    "* * * * *", "0 * * * *", "30 2 * * *", "0 3 * * *", "30 1 * * *", "0 2 * * *",
    "59 1 * * *", "15 2,3 * * *", "*/20 * * * *", "*/7 * * * *", "*/45 * * * *",
    "*/60 * * * *", "*/100 * * * *", "5/15 * * * *", "0-30/10 * * * *", "10-20 * * * *",
    "1,2,3,58,59 * * * *", "0 */2 * * *", "0 1/3 * * *", "30 0-23/6 * * *", "0 9-17 * * 1-5",
    "0 22 * * 1-5", "0 0 1 * *", "0 0 31 * *", "0 0 30 * *", "0 0 29 2 *", "0 0 30 2 *",
    "0 0 31 4,6,9,11 *", "0 12 * * 0", "0 12 * * 7", "0 12 * * 5-7", "0 12 * * 0,7",
    "0 12 13 * 5", "0 0 1 * 1", "0 0 1-7 * 1", "0 0 */10 * 2", "0 0 1-31 * 1", "0 0 15 * 0-6",
    "0 0 * * 1/2", "0 0 * * */3", "0 0 1 1 *", "59 23 31 12 *", "0 0 * 2 *", "0 0 * */3 *",
    "0 0 1 2/4 *", "0 0 * 1-3,10-12 *", "15,45 */4 1,15 * *", "0 2-3 * * *", "0 1-2 * * *",
    "30 1-3 * * *", "0,30 0-4 * * *", "*/30 2 * * *", "*/30 1 * * *", "45 1 * * 0",
    "0 2 * 3,10 0", "0 2 8-14 3 0", "30 2 1-7 10 0", "0 0 * * 6",
    " 5  4\t* * * ", "00 04 01 01 00", "0 0 1,15 * 3", "*/5 1-2 25-31 3,10 *",
    "0 0 29 2 1", "0 0 1,30 * *", "0 0 1,31 * *",
]

BAD = [
    "60 * * * *", "* 24 * * *", "* * 32 * *", "* * 0 * *", "* * * 13 *", "* * * 0 *",
    "* * * * 8", "*/0 * * * *", "* 1-5/0 * * *", "5-2 * * * *", "1,,2 * * * *", "* 1, * * *",
    "* * * *", "* * * * * * *", "x * * * *", "* -1 * * *", "* * 1x * *", "", "1- * * * *",
    "* * * * */2/2",
]

FIELDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)]


def item(rng, lo, hi):
    a = rng.randint(lo, hi)
    b = rng.randint(a, hi)
    step = rng.choice([1, 2, 3, 5, 7, 10, 15, 25])
    return rng.choice([
        str(a), "%d-%d" % (a, b), "*/%d" % step, "%d-%d/%d" % (a, b, step), "%d/%d" % (a, step),
    ])


def field(rng, lo, hi):
    kind = rng.random()
    if kind < 0.3:
        return "*"
    if kind < 0.75:
        return item(rng, lo, hi)
    return ",".join(item(rng, lo, hi) for _ in range(rng.randint(2, 3)))


def generated(n, seed=13):
    rng = random.Random(seed)
    exprs = []
    while len(exprs) < n:
        expr = " ".join(field(rng, lo, hi) for lo, hi in FIELDS)
        if croniter.is_valid(expr) and expr not in exprs:
            exprs.append(expr)
    return exprs


def transitions(zone, year):
    """The instants in year at which zone's UTC offset changes."""
    found = []
    t = int(datetime.datetime(year, 1, 1, tzinfo=datetime.timezone.utc).timestamp())
    end = t + 366 * 86400
    offset = datetime.datetime.fromtimestamp(t, zone).utcoffset()
    while t < end:
        nxt = datetime.datetime.fromtimestamp(t + 1800, zone).utcoffset()
        if nxt != offset:
            lo, hi = t, t + 1800
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if datetime.datetime.fromtimestamp(mid, zone).utcoffset() == offset:
                    lo = mid
                else:
                    hi = mid
            found.append(hi)
            offset = nxt
        t += 1800
    return found


def starts(zone):
    local = [(2026, 1, 1, 0, 0, 0), (2026, 7, 15, 13, 37, 20), (2028, 2, 28, 23, 59, 59)]
    out = [int(datetime.datetime(*x, tzinfo=zone).timestamp()) for x in local]
    for t in transitions(zone, 2026):
        out += [t - 600, t - 60, t - 22 * 3600]
    return out


def search(expr, start, zone):
    """croniter's search for the first fire time after start, without get_next's shift."""
    it = croniter(expr, datetime.datetime.fromtimestamp(start, zone))
    expanded, nth = it.expanded, it.nth_weekday_of_month
    if expanded[2] != ["*"] and expanded[4] != ["*"]:
        variants = [expanded[:4] + [["*"]], expanded[:2] + [["*"]] + expanded[3:]]
    else:
        variants = [expanded]
    s = start
    while True:
        try:
            t = min(it._calc(s, [list(f) for f in v], dict(nth), False) for v in variants)
        except CroniterBadDateError:
            return -1
        if t > start:
            return int(t) if t - start <= FIVE_YEARS else -1
        s += 60


def fires(expr, t, zone):
    """Whether the wall clock at t matches expr, croniter's sets read with the day rule."""
    minute, hour, dom, month, dow = croniter(expr).expanded
    w = datetime.datetime.fromtimestamp(t, zone)
    within = lambda v, s: s == ["*"] or v in s
    days = [within(w.day, dom), within(w.isoweekday() % 7, dow)]
    day = any(days) if dom != ["*"] and dow != ["*"] else all(days)
    return w.second == 0 and within(w.minute, minute) and within(w.hour, hour) and \
        within(w.month, month) and day


def skipped(expr, start, got, want, zone):
    """Whether croniter's want passed over got, a fire time on an earlier day, no DST before it."""
    offset = lambda t: datetime.datetime.fromtimestamp(t, zone).utcoffset()
    day = lambda t: datetime.datetime.fromtimestamp(t, zone).date()
    return start < got < want and offset(start) == offset(got) and \
        day(got) < day(want) and fires(expr, got, zone)


def expected(expr, start, zone, tally):
    """The next fire time after start as croniter's search finds it, and how get_next differs."""
    try:
        got = croniter(expr, datetime.datetime.fromtimestamp(start, zone)).get_next(float)
        got = int(got) if got - start <= FIVE_YEARS else -1
    except CroniterBadDateError:
        got = -1
    offset = lambda t: datetime.datetime.fromtimestamp(t, zone).utcoffset()
    if got > start and offset(got) == offset(start):
        tally["agree"] += 1
        return got
    want = search(expr, start, zone)
    if got == want:
        tally["agree"] += 1
    elif got != -1 and got <= start:
        tally["back"] += 1
    else:
        tally["moved"] += 1
    return want


def run(cron_next, zone_name, lines):
    out = subprocess.run([cron_next], input="".join(lines), stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, TZ=zone_name), check=True).stdout.splitlines()
    if len(out) != len(lines):
        sys.exit("cron-next answered %d lines to %d" % (len(out), len(lines)))
    return out


def show(t, zone):
    if t < 0:
        return "none"
    return datetime.datetime.fromtimestamp(t, zone).isoformat()


def main():
    cron_next = sys.argv[1]
    exprs = FIXED + generated(100)
    zones = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"]
    failures = 0
    tally = {"agree": 0, "back": 0, "moved": 0, "skipped": 0}
    checked = 0

    for name in zones:
        zone = ZoneInfo(name)
        cases = [(e, s) for e in exprs for s in starts(zone)]
        answers = run(cron_next, name, ["%d %d %s\n" % (s, COUNT, e) for e, s in cases])
        for (expr, start), answer in zip(cases, answers):
            checked += 1
            if answer.startswith("error"):
                failures += 1
                print("FAIL %s %r: ours %s" % (name, expr, answer))
                continue
            ours, t = [int(x) for x in answer.split()], start
            for i, got in enumerate(ours):
                want = expected(expr, t, zone, tally)
                if got != want and skipped(expr, t, got, want, zone):
                    tally["skipped"] += 1
                elif got != want:
                    failures += 1
                    if failures <= 20:
                        print("FAIL %s %r, fire time %d after %s: croniter %s, ours %s"
                              % (name, expr, i + 1, show(t, zone), show(want, zone),
                                 show(got, zone)))
                    break
                t = got
            if len(ours) < COUNT and ours[-1:] != [-1]:
                failures += 1
                print("FAIL %s %r: %d fire times" % (name, expr, len(ours)))
        print("%s: %d expressions x %d starts" % (name, len(exprs), len(starts(zone))))

    bad = run(cron_next, "UTC", ["0 1 %s\n" % e for e in BAD])
    for expr, answer in zip(BAD, bad):
        if croniter.is_valid(expr) or not answer.startswith("error: "):
            failures += 1
            print("FAIL %r: croniter valid=%s, ours %r" % (expr, croniter.is_valid(expr), answer))

    print("%d sequences of up to %d fire times; of the %d fire times, %d as croniter's get_next "
          "gives them, %d where get_next went back, %d where it moved them, %d where croniter "
          "skipped a fire time ours shows to match; %d expressions refused by both"
          % (checked, COUNT, sum(tally.values()), tally["agree"], tally["back"],
             tally["moved"], tally["skipped"], len(BAD)))
    print("%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: MIT
"""The next ten fire times of cron-next (daemon/util/cron.c) against python3-croniter's.

Usage: cron-oracle.py CRON_NEXT. Every expression of a fixed list and of a generated one (fixed
seed, a third of them with names for months and days of the week) is run from several start
times in each zone, and each of the ten fire times is counted from the one before, as the daemon
does. Expressions croniter refuses must be refused too.

croniter's day rule is not cron's: it ANDs the day fields when either set is full, where Vixie
cron and cronie AND them when either field's text starts with "*" ("*/2" and "1" are the odd
Mondays, "1-31" and "1" every day). So croniter gets the expression rewritten to one whose
meaning in its rule is cron's: a full day field becomes "*" (and both do when cron ORs them with
one full), and two restricted fields that cron ANDs are given with day_or=False.

croniter around DST (1.3.5, with zoneinfo): its search walks the wall clock and reads the wall time
it finds with fold=0 (a skipped 02:30 is 03:30 after the change; a repeated 02:30 is the first
one). Two things then go wrong, and there the expected time is croniter's own search, taken
past the start:
 - "back": from the last minute of a repeated hour (or from inside its second pass) the search
   starts on the repeated wall clock and returns its first pass, before the start;
 - "moved": get_next shifts a result whose UTC offset differs from the start's by the difference
   once the result is "past midnight", so a daily 03:00 fires at 04:00 the day after fall-back.
It also fires only the first of several matches in a skipped hour ("*/15 2 * * *" fires 03:00,
then nothing until the next night), where the daemon fires each shifted by the change (03:00,
03:15, 03:30, 03:45): a fire time of ours before croniter's that is a skipped wall time shifted
is checked on the wall clock before the change ("shifted"), tests/test-cron.c holding the rest
of it against an oracle of its own.
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
    "0 0 */2 * 1", "0 0 *,5 * 1", "0 0 5,* * 1", "0 0 1-31 * 0-6", "0 0 13 * */7",
    "0 0 * jan mon-fri", "0 9 * jan,Mar mon-FRI", "30 8 * * SAT,sun", "0 0 1 FEB-apr/2 *",
    "0 0 15 * Mon", "0 0 * * sun-sat/3", "*/15 2 * * *", "*/10 2-3 * * *",
    "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
]

BAD = [
    "60 * * * *", "* 24 * * *", "* * 32 * *", "* * 0 * *", "* * * 13 *", "* * * 0 *",
    "* * * * 8", "*/0 * * * *", "* 1-5/0 * * *", "5-2 * * * *", "1,,2 * * * *", "* 1, * * *",
    "* * * *", "* * * * * * *", "x * * * *", "* -1 * * *", "* * 1x * *", "", "1- * * * *",
    "* * * * */2/2", "@reboot", "@every", "* * * * foo", "* * * * mon-", "* * * * monday",
    "* * * mon *", "* * * * */mon",
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


MONTHS = "jan feb mar apr may jun jul aug sep oct nov dec".split()
DAYS = "sun mon tue wed thu fri sat".split()


def named(expr, rng):
    """expr with the values (not the steps) of its month and day-of-week fields as names, in a
    random case; day-of-week 7 stays a number (cron's "sun" is 0)."""
    def name(names, first, text):
        out, i = "", 0
        while i < len(text):
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            if j == i:
                out += text[i]
                i += 1
                continue
            v = int(text[i:j])
            if (i == 0 or text[i - 1] != "/") and 0 <= v - first < len(names):
                out += "".join(c.upper() if rng.random() < 0.3 else c for c in names[v - first])
            else:
                out += text[i:j]
            i = j
        return out
    f = expr.split()
    return " ".join(f[:3] + [name(MONTHS, 1, f[3]), name(DAYS, 0, f[4])])


def generated(n, seed=13):
    rng = random.Random(seed)
    names = random.Random(seed + 1)
    exprs = []
    while len(exprs) < n:
        expr = " ".join(field(rng, lo, hi) for lo, hi in FIELDS)
        if len(exprs) % 3 == 2:
            expr = named(expr, names)
        if croniter.is_valid(expr) and expr not in exprs:
            exprs.append(expr)
    return exprs


NICKNAMES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
             "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
             "@hourly": "0 * * * *"}


class Cron:
    """An expression as cron reads it (fields, and whether the day fields AND), and as croniter
    must be given it to mean the same (text, day_or), with one croniter made for it."""

    def __init__(self, expr):
        self.expr = expr
        self.fields = NICKNAMES.get(expr.strip(), expr).split()
        expanded = croniter(" ".join(self.fields)).expanded
        dom_full = "*" in expanded[2] or len(expanded[2]) == 31
        dow_full = "*" in expanded[4] or set(range(7)) <= set(expanded[4])
        self.day_and = self.fields[2].startswith("*") or self.fields[4].startswith("*")
        dom, dow = self.fields[2], self.fields[4]
        if dom_full or dow_full:
            if self.day_and:
                dom, dow = ("*" if dom_full else dom), ("*" if dow_full else dow)
            else:
                dom, dow = "*", "*"
        self.text = " ".join(self.fields[:2] + [dom, self.fields[3], dow])
        self.day_or = not self.day_and
        self.expanded = croniter(self.text).expanded
        self.it = None

    def croniter(self, start, zone):
        """croniter at start, one object reused (parsing is most of its cost)."""
        when = datetime.datetime.fromtimestamp(start, zone)
        if self.it is None or self.it.tzinfo is not zone:
            self.it = croniter(self.text, when, day_or=self.day_or)
        else:
            self.it.set_current(when, force=True)
        return self.it


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


def search(cron, start, zone):
    """croniter's search for the first fire time after start, without get_next's shift."""
    it = croniter(cron.text, datetime.datetime.fromtimestamp(start, zone), day_or=cron.day_or)
    expanded, nth = it.expanded, it.nth_weekday_of_month
    if expanded[2] != ["*"] and expanded[4] != ["*"] and cron.day_or:
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


def matches(cron, w):
    """Whether the wall time w matches, croniter's sets read with cron's day rule."""
    minute, hour, dom, month, dow = cron.expanded
    within = lambda v, s: s == ["*"] or v in s
    days = [within(w.day, dom), within(w.isoweekday() % 7, dow)]
    day = all(days) if cron.day_and else any(days)
    return w.second == 0 and within(w.minute, minute) and within(w.hour, hour) and \
        within(w.month, month) and day


def fires(cron, t, zone):
    """Whether the wall clock at t matches."""
    return matches(cron, datetime.datetime.fromtimestamp(t, zone))


def skipped(cron, start, got, want, zone):
    """Whether croniter's want passed over got, a fire time on an earlier day, no DST before it."""
    offset = lambda t: datetime.datetime.fromtimestamp(t, zone).utcoffset()
    day = lambda t: datetime.datetime.fromtimestamp(t, zone).date()
    return start < got < want and offset(start) == offset(got) and \
        day(got) < day(want) and fires(cron, got, zone)


def shifted(cron, start, got, want, zone):
    """Whether got, before croniter's want, is a matching wall time that a change of offset
    skipped, shifted by the change: got is within the change's length after it (one change in a
    day), and the wall clock then less the change matches."""
    if not start < got or 0 < want <= got:
        return False
    offset = lambda t: datetime.datetime.fromtimestamp(t, zone).utcoffset()
    gap = offset(got) - offset(got - 86400)
    if gap <= datetime.timedelta(0) or offset(got - int(gap.total_seconds())) == offset(got):
        return False
    wall = datetime.datetime.fromtimestamp(got, zone).replace(tzinfo=None) - gap
    return matches(cron, wall)


def expected(cron, start, zone, tally):
    """The next fire time after start as croniter's search finds it, and how get_next differs."""
    try:
        got = cron.croniter(start, zone).get_next(float)
        got = int(got) if got - start <= FIVE_YEARS else -1
    except CroniterBadDateError:
        got = -1
    offset = lambda t: datetime.datetime.fromtimestamp(t, zone).utcoffset()
    if got > start and offset(got) == offset(start):
        tally["agree"] += 1
        return got
    want = search(cron, start, zone)
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
    tally = {"agree": 0, "back": 0, "moved": 0, "skipped": 0, "shifted": 0}
    checked = 0
    crons = {e: Cron(e) for e in exprs}

    for name in zones:
        zone = ZoneInfo(name)
        zone_starts = starts(zone)
        cases = [(e, s) for e in exprs for s in zone_starts]
        answers = run(cron_next, name, ["%d %d %s\n" % (s, COUNT, e) for e, s in cases])
        for (expr, start), answer in zip(cases, answers):
            cron = crons[expr]
            checked += 1
            if answer.startswith("error"):
                failures += 1
                print("FAIL %s %r: ours %s" % (name, expr, answer))
                continue
            ours, t = [int(x) for x in answer.split()], start
            for i, got in enumerate(ours):
                want = expected(cron, t, zone, tally)
                if got != want and skipped(cron, t, got, want, zone):
                    tally["skipped"] += 1
                elif got != want and shifted(cron, t, got, want, zone):
                    tally["shifted"] += 1
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
        print("%s: %d expressions x %d starts" % (name, len(exprs), len(zone_starts)))

    bad = run(cron_next, "UTC", ["0 1 %s\n" % e for e in BAD])
    for expr, answer in zip(BAD, bad):
        if croniter.is_valid(expr) or not answer.startswith("error: "):
            failures += 1
            print("FAIL %r: croniter valid=%s, ours %r" % (expr, croniter.is_valid(expr), answer))

    print("%d sequences of up to %d fire times; of the %d fire times, %d as croniter's get_next "
          "gives them, %d where get_next went back, %d where it moved them, %d where croniter "
          "skipped a fire time ours shows to match, %d where it lost a skipped wall time ours "
          "fired shifted; %d expressions refused by both"
          % (checked, COUNT, sum(tally.values()), tally["agree"], tally["back"],
             tally["moved"], tally["skipped"], tally["shifted"], len(BAD)))
    print("%d failures" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""File a learning platform's bulk download of submissions into the course: what
``make collect ZIP=<file> ASSIGNMENT=<name>`` runs.

    python -m classroom.tools.collect ZIP ASSIGNMENT [--course DIR] [--assign FILE:ID] [--force]

``ZIP`` is the platform's download as it is (a zip, or the folder it unpacks to). Each
submission ends at ``submitted/<student id>/<assignment>/<notebook>``, where ``make autograde``
grades it. The format is recognized from the file names (``FORMATS``):

    Moodle            김수민_12345_assignsubmission_file_01_layernorm.ipynb (or a folder of that name)
    Canvas            kimsumin_12345_67890_01_layernorm.ipynb   (kimsumin_LATE_12345_… when late)
    Google Classroom  김수민 - 01_layernorm.ipynb
    a plain folder    <id>.ipynb, <id>_<anything>.ipynb or <id>/…

and refused, with the names seen, when it is none of them. Students are matched to the course's
``students.csv`` (classroom/tools/roster.py) by number where the number is one the roster holds (the id in a
plain folder, Canvas's user number in Canvas's download; Moodle's is a participant number of one
assignment) and otherwise by name (of two of the same name, the one on that platform when
students.csv says so); without a roster, the platform's number names the folder. Two students of
the same name are not guessed: the console prints the command that places the file,
``--assign <file>:<id>`` (``make collect … ASSIGN=…``), kept in ``collected/<assignment>/assigned.txt``
for the next zips. Inside, zips are unpacked however deeply nested (names in UTF-8 or, as
Windows writes them, CP949; macOS's decomposed Hangul is recomposed); ``.ipynb_checkpoints``,
``__MACOSX`` and the like are ignored. A student's notebook is the one named as released, or a
copy of it (``01_layernorm (1).ipynb``, Canvas's ``01_layernorm-1.ipynb``: the newest when there
are several), or the student's only notebook whatever its name (``과제1_송유나.ipynb``).

Nothing is lost: what is not placed (a second notebook, a PDF, a student not on the roster, a
name the format does not explain) is copied to ``collected/<assignment>/unplaced/`` and named
with the remedy (it leaves that folder once placed). Collect never goes back in time: a
submission is replaced only by a newer file (the zip entry's time, or the file's; the old one is
kept in ``collected/<assignment>/replaced/<id>/`` under a name no other version has), an older one
is not put in place but kept there too, and said (``--force`` puts it in place). The same zip
twice changes nothing; a later zip (late submissions) adds or replaces only its own students.
Exit status 1 when a file that may be an answer is left to place, said on the last line. ``collected/<assignment>/platform.csv``
keeps each student's platform file prefix, which ``make feedback-export`` names the pages with.

nbgrader's own ``zip_collect`` can use the same patterns (``--collector classroom.tools.collect.Moodle``,
``Canvas``, ``GoogleClassroom``, ``PlainFolder``): it copies by one regular expression, with no
roster, no choice among versions and no place for what it cannot file, hence this command.
"""

from __future__ import annotations

import argparse
import csv
import glob
import io
import os
import re
import shlex
import shutil
import sys
import unicodedata
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from nbgrader.plugins.zipcollect import FileNameCollectorPlugin

from classroom.tools import roster as rosters
from classroom.tools.classroom import assignments, shown

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "classroom" / "course"
IGNORED_PARTS = {"__MACOSX", ".ipynb_checkpoints", ".DS_Store", "Thumbs.db", "desktop.ini", ".git"}
MANIFEST = ("student_id", "name", "platform", "prefix", "zip", "file", "how")


# --------------------------------------------------------------------------- the platforms' names

class _Pattern(FileNameCollectorPlugin):
    """A platform's file-name pattern; as an nbgrader collector plugin, it reads the base name."""
    label = ""
    example = ""
    platform = ""           # the platform's name in students.csv's platform column, when it has one

    def collect(self, submitted_file: str):
        found = super().collect(submitted_file) if submitted_file.endswith(".ipynb") else None
        return found and self._match(os.path.basename(submitted_file))

    def _match(self, filename: str):
        m = re.match(self.named_regexp, filename)
        return m.groupdict() if m else None


class Moodle(_Pattern):
    label, example, platform = "Moodle", "김수민_12345_assignsubmission_file_01_layernorm.ipynb", "moodle"
    named_regexp = r"^(?P<name>.+?)_(?P<student_id>\d+)_assignsubmission_(?P<plugin>[a-z]+)(?:_(?P<file_id>.*))?$"

    def prefix(self, m: dict) -> str:
        return f"{m['name']}_{m['student_id']}_assignsubmission_file_"


class Canvas(_Pattern):
    label, example, platform = "Canvas", "kimsumin_12345_67890_01_layernorm.ipynb", "canvas"
    # late: _LATE_ (Canvas now), _late_ (Canvas before), in any case
    named_regexp = r"^(?P<name>[^_]+?)(?P<late>_(?i:late))?_(?P<student_id>\d+)_(?P<attachment>\d+)_(?P<file_id>.+)$"

    def prefix(self, m: dict) -> str:
        return f"{m['name']}{m['late'] or ''}_{m['student_id']}_{m['attachment']}_"


class GoogleClassroom(_Pattern):
    label, example = "Google Classroom", "김수민 - 01_layernorm.ipynb"
    named_regexp = r"^(?P<name>[^/]+?) - (?P<file_id>.+)$"

    def prefix(self, m: dict) -> str:
        return f"{m['name']} - "


class PlainFolder(_Pattern):
    label, example = "a plain folder", "20231234.ipynb or 20231234_01_layernorm.ipynb"
    named_regexp = r"^(?P<student_id>[^_\s./\\]+?)(?:_(?P<file_id>.+?))?(?:\.ipynb)?$"

    def prefix(self, m: dict) -> str:
        return f"{m['student_id']}_"


FORMATS = (Moodle(), Canvas(), GoogleClassroom(), PlainFolder())


# --------------------------------------------------------------------------- what the zip holds

@dataclass
class Entry:
    path: str                       # inside the download: "outer/inner.zip/folder/file.ipynb"
    data: bytes
    when: datetime | None = None


def _name(info: zipfile.ZipInfo) -> str:
    """An entry's name as its writer meant it: UTF-8 when flagged, else CP949 (Windows) or UTF-8
    unflagged (macOS), else what zipfile read; Hangul recomposed (macOS writes it decomposed)."""
    name = info.filename
    if not info.flag_bits & 0x800:
        raw = name.encode("cp437", errors="replace")
        for encoding in ("utf-8", "cp949"):
            try:
                name = raw.decode(encoding)
                break
            except UnicodeDecodeError:
                continue
    return unicodedata.normalize("NFC", name)


def _ignored(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return any(p in IGNORED_PARTS or p.startswith("._") for p in parts)


def read_download(source: Path, ids: frozenset[str] = frozenset()) -> tuple[list[Entry], int]:
    """Every file of a zip (nested zips opened) or a folder; and how many were ignored. One folder
    around everything is taken off, unless it is a student's (its name a format's, or an id of ``ids``)."""
    entries: list[Entry] = []
    ignored = 0

    def walk_zip(data: bytes, prefix: str, depth: int) -> None:
        nonlocal ignored
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                name = _name(info)
                if info.is_dir():
                    continue
                if _ignored(name):
                    ignored += 1
                    continue
                content = archive.read(info)
                path = prefix + name
                if name.lower().endswith(".zip") and depth < 8 and zipfile.is_zipfile(io.BytesIO(content)):
                    walk_zip(content, path + "/", depth + 1)
                else:
                    entries.append(Entry(path, content, datetime(*info.date_time)))

    if source.is_dir():
        for file in sorted(p for p in source.rglob("*") if p.is_file()):
            rel = unicodedata.normalize("NFC", file.relative_to(source).as_posix())
            if _ignored(rel):
                ignored += 1
            elif file.suffix.lower() == ".zip" and zipfile.is_zipfile(file):
                walk_zip(file.read_bytes(), rel + "/", 1)
            else:
                entries.append(Entry(rel, file.read_bytes(), datetime.fromtimestamp(file.stat().st_mtime)))
    else:
        walk_zip(source.read_bytes(), "", 0)
    # one folder around everything (a download unpacked, then zipped again): not a student's
    tops = {e.path.split("/", 1)[0] for e in entries}
    if len(tops) == 1 and all("/" in e.path for e in entries) and not _format_of(next(iter(tops)), strict=True) \
            and next(iter(tops)) not in ids:
        cut = len(next(iter(tops))) + 1
        for e in entries:
            e.path = e.path[cut:]
    return entries, ignored


def _format_of(head: str, strict: bool = False):
    for fmt in FORMATS[:-1] if strict else FORMATS:
        if fmt._match(head):
            return fmt
    return None


def detect(heads: list[str], ids: set[str]) -> _Pattern | None:
    """The format that explains most of the top-level names (a plain folder's only when its ids
    are on the roster, or there is no roster); None when none explains half of them."""
    def explained(fmt) -> int:
        hits = [fmt._match(h) for h in heads]
        if fmt is FORMATS[-1]:
            hits = [m for m in hits if m and (not ids or m["student_id"].removesuffix(".ipynb") in ids)]
        return sum(bool(m) for m in hits)

    scores = {fmt: explained(fmt) for fmt in FORMATS}
    best = max(FORMATS, key=lambda f: (scores[f], -FORMATS.index(f)))
    return best if scores[best] and 2 * scores[best] >= len(heads) else None


# --------------------------------------------------------------------------- who handed it in

@dataclass
class Owner:
    """Whose files a top-level name holds, and how that was decided."""
    student: rosters.Student | None
    why: str
    prefix: str = ""
    display: str = ""
    namesakes: tuple[str, ...] = ()     # the ids of the students of the same name, when that is why none was chosen


def owner(fmt: _Pattern, head: str, students: list[rosters.Student]) -> Owner:
    m = fmt._match(head) or {}
    number = (m.get("student_id") or "").removesuffix(".ipynb")
    name = m.get("name") or ""
    prefix = fmt.prefix(m) if m else ""
    shown_as = name or number
    if not students:
        sid = number or rosters.normal_name(name)
        return Owner(rosters.Student(sid, name=name), "no students.csv: the platform's "
                     + ("number" if number else "name"), prefix, shown_as)
    # a number is the student's id in a plain folder, Canvas's user number in Canvas's download; Moodle's is a
    # participant number of the assignment, which the roster does not hold
    by_number = [s for s in students if number and number == (s.canvas_id if isinstance(fmt, Canvas) else
                                                               s.id if isinstance(fmt, PlainFolder) else None)]
    if len(by_number) == 1:
        return Owner(by_number[0], "id on the roster" if by_number[0].id == number else f"{fmt.label} number on the roster",
                     prefix, shown_as)
    key = rosters.normal_name(name)
    by_name = [s for s in students if key and key in rosters.name_keys(s)]
    on_platform = [s for s in by_name if fmt.platform in s.platforms]
    if len(by_name) > 1 and len(on_platform) == 1:          # one of them is on this platform (students.csv says)
        return Owner(on_platform[0], f"name on the roster, the one on {fmt.label}", prefix, shown_as)
    if len(by_name) > 1 and on_platform:
        by_name = on_platform
    if len(by_name) == 1:
        return Owner(by_name[0], "name on the roster", prefix, shown_as)
    if len(by_name) > 1:
        return Owner(None, f"{len(by_name)} students of students.csv are called {name} "
                     f"({', '.join(s.id for s in by_name)})", prefix, shown_as, tuple(s.id for s in by_name))
    return Owner(None, f"{shown_as} is not in students.csv (by {'number or ' if number else ''}name)", prefix, shown_as)


_COPY = re.compile(r"^(?P<stem>.+?)(?:\s*\(\d+\)|-\d+)?$")


def _stem(filename: str) -> str:
    return _COPY.match(PurePosixPath(filename).stem).group("stem").strip()


@dataclass
class Placement:
    entry: Entry
    student: rosters.Student | None
    target: str = ""        # the released notebook's name, or "" when not placed
    why: str = ""
    remedy: str = ""
    result: str = ""        # new / replaced / unchanged / older (the one there is newer, and stays)
    owner: Owner | None = None
    kept: Path | None = None    # the version kept in replaced/: the old one replaced, or this one when older


def choose(files: list[Entry], released: list[str], head_of) -> tuple[dict[str, tuple[Entry, str]], list[tuple[Entry, str]]]:
    """For one student's files: released notebook → (entry, why), and the files left with why."""
    chosen: dict[str, tuple[Entry, str]] = {}
    notebooks = [e for e in files if e.path.lower().endswith(".ipynb")]
    for name in released:
        base = PurePosixPath(name).stem
        exact = [e for e in notebooks if PurePosixPath(head_of(e)).name == name]
        copies = [e for e in notebooks if e not in exact and _stem(head_of(e)) == base]
        found = sorted(exact + copies, key=lambda e: (e.when or datetime.min, e in exact))
        if found:
            pick = found[-1]
            named = PurePosixPath(head_of(pick)).name
            why = "named as released" if pick in exact else f"a copy of {name} (named {named})"
            if len(found) > 1:
                why += f"; the newest of {len(found)} versions"
            chosen[name] = (pick, why)
    taken = {id(e) for e, _ in chosen.values()}
    if not chosen and len(released) == 1 and len(notebooks) == 1:
        chosen[released[0]] = (notebooks[0], f"the student's only notebook (named {PurePosixPath(head_of(notebooks[0])).name})")
        taken.add(id(notebooks[0]))
    left = []
    for e in files:
        if id(e) in taken:
            continue
        if not e.path.lower().endswith(".ipynb"):
            left.append((e, "not a notebook: nothing to grade"))
        elif chosen:
            left.append((e, "an older version or another notebook: the one above is graded"))
        else:
            left.append((e, f"{len(notebooks)} notebooks, none named {' or '.join(released)}: which one is the answer?"))
    return chosen, left


def _file_name(entry: Entry, fmt: _Pattern) -> str:
    """The name the student gave the file: the platform's prefix taken off a top-level file."""
    if "/" in entry.path:
        return PurePosixPath(entry.path).name
    name = (fmt._match(entry.path) or {}).get("file_id") or entry.path
    suffix = PurePosixPath(entry.path).suffix
    return name if name.endswith(suffix) else name + suffix


def released_notebooks(course: Path, assignment: str) -> list[str]:
    """The notebooks of ``assignment`` as released (as in source/ when it was not released yet);
    an assignment not in source/ is refused by the classroom's own check, naming those that are."""
    assignments(course, [assignment])
    for folder in ("release", "source"):
        names = sorted(p.name for p in (course / folder / assignment).glob("*.ipynb"))
        if names:
            return names
    raise SystemExit(f"PROBLEM {shown(course / 'source' / assignment)}/ holds no notebook\n"
                     "  what to do: write the assignment's notebooks again: make assignments")


def _stamp(when: datetime) -> str:
    return when.strftime("%Y%m%d-%H%M%S")


def _aside(folder: Path, path: Path, data: bytes, when: datetime | None) -> Path:
    """Keep ``data`` (a version of ``path``) in ``folder`` under a name no other version has:
    ``<stem>.<its time>[-N]<suffix>``; a version already kept there is not kept twice."""
    folder.mkdir(parents=True, exist_ok=True)
    for kept in sorted(folder.glob(f"{glob.escape(path.stem)}.*{glob.escape(path.suffix)}")):
        if kept.read_bytes() == data:
            return kept
    stem = f"{path.stem}.{_stamp(when or datetime.now())}"
    candidate, n = folder / f"{stem}{path.suffix}", 2
    while candidate.exists():
        candidate, n = folder / f"{stem}-{n}{path.suffix}", n + 1
    candidate.write_bytes(data)
    if when is not None:
        os.utime(candidate, (when.timestamp(), when.timestamp()))
    return candidate


def _write(path: Path, data: bytes, when: datetime | None, aside: Path, force: bool = False) -> tuple[str, Path | None]:
    """Put ``data`` at ``path``: (new | unchanged (the same bytes) | replaced (the old file kept in ``aside``)
    | older (``data`` is older than the file there, which stays: ``data`` is kept in ``aside``), the file kept)."""
    kept = None
    if path.exists():
        old = path.read_bytes()
        if old == data:
            return "unchanged", None
        there = datetime.fromtimestamp(path.stat().st_mtime)
        if when is not None and when < there and not force:
            return "older", _aside(aside, path, data, when)
        kept = _aside(aside, path, old, there)
        path.unlink()
        result = "replaced"
    else:
        result = "new"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if when is not None:
        seconds = when.timestamp()
        os.utime(path, (seconds, seconds))
    return result, kept


@dataclass
class Collected:
    platform: str
    placed: list[Placement] = field(default_factory=list)
    unplaced: list[Placement] = field(default_factory=list)
    ignored: int = 0
    missing: list[rosters.Student] = field(default_factory=list)
    cleared: int = 0            # files of unplaced/ placed now, taken out of it


def command(source: Path, assignment: str, course: Path, assign: str = "") -> str:
    """``make collect`` as a teacher types it again (this script's own line outside make), with ``ASSIGN``."""
    elsewhere = course.resolve() != COURSE.resolve()
    if os.environ.get("MAKELEVEL"):
        parts = ["make", "collect", f"ZIP={source}", f"ASSIGNMENT={assignment}"]
        parts += [f"COURSE={shown(course)}"] if elsewhere else []
        parts += [f"ASSIGN={assign}"] if assign else []
    else:
        parts = [shown(Path(sys.executable)), "-m", "classroom.tools.collect", str(source), assignment]
        parts += ["--course", shown(course)] if elsewhere else []
        parts += ["--assign", assign] if assign else []
    return shlex.join(parts)


def _assignments(spec: list[str], entries: list[Entry], students: list[rosters.Student],
                 source: Path) -> dict[str, rosters.Student]:
    """``ASSIGN=<file>:<id>`` (several separated by ``;``): the file (a top-level name of the download, or a path
    inside it) → its student; refused, naming what is there, when either is unknown."""
    by_id = {s.id: s for s in students}
    names = {e.path for e in entries} | {e.path.split("/", 1)[0] for e in entries}
    chosen = {}
    for item in (part.strip() for text in spec for part in text.split(";") if part.strip()):
        name, sep, sid = item.rpartition(":")
        if not sep or not name or not sid:
            raise SystemExit(f"PROBLEM ASSIGN={item}: expected <file>:<student id>, e.g. "
                             "ASSIGN=\"김민준_2318408_assignsubmission_file_02_batchnorm.ipynb:2024103814\"")
        name = unicodedata.normalize("NFC", name)
        if name not in names:
            near = sorted(n for n in names if "/" not in n)
            raise SystemExit(f"PROBLEM ASSIGN={item}: {shown(source)} has no file {name!r}; its names are "
                             + ", ".join(near[:8]) + (f", … ({len(near)} in all)" if len(near) > 8 else "")
                             + "\n  what to do: copy the name from the lines \"not placed\" of make collect")
        if students and sid not in by_id:
            raise SystemExit(f"PROBLEM ASSIGN={item}: {sid} is not an id of students.csv\n  what to do: give the "
                             "student's id as students.csv has it (make roster FILE=<class list> ADD=1 adds a student)")
        chosen[name] = by_id.get(sid) or rosters.Student(sid)
    return chosen


def collect(source: Path, assignment: str, course: Path = COURSE, again: str = "", assign: list[str] = (),
            force: bool = False) -> Collected:
    """File the download ``source`` (see the module's docstring); raises SystemExit with the
    names seen when its format is none of FORMATS."""
    released = released_notebooks(course, assignment)
    students = load_roster(course)
    entries, ignored = read_download(source, frozenset(s.id for s in students))
    if not entries:
        raise SystemExit(f"PROBLEM {shown(source)} holds no file to collect ({ignored} ignored: checkpoints, __MACOSX)\n"
                         "  what to do: download the submissions again from the platform (all of them, as one zip)")
    heads = sorted({e.path.split("/", 1)[0] for e in entries})
    fmt = detect(heads, {s.id for s in students})
    if fmt is None:
        seen = ", ".join(heads[:8]) + (f", … ({len(heads)} in all)" if len(heads) > 8 else "")
        raise SystemExit(
            f"PROBLEM {shown(source)} is not a download this command knows: its names are {seen}\n"
            "  what to do: expected one of " + "; ".join(f"{f.label} ({f.example})" for f in FORMATS)
            + ". Rename the files to <student id>.ipynb in one folder and run again")
    collected = course / "collected" / assignment
    remembered = _remembered(collected, {e.path for e in entries} | set(heads))
    assigned = {**_assignments(remembered, entries, students, source), **_assignments(list(assign), entries, students,
                                                                                    source)}
    if assign:
        _remember(collected, assign)
    report = Collected(fmt.label, ignored=ignored)
    owners = {h: owner(fmt, h, students) if fmt._match(h) else None for h in heads}

    def who_of(e: Entry) -> tuple[Owner | None, str]:
        """The entry's owner, and its group (a file inside a folder, assigned alone, is a group of its own)."""
        head = e.path.split("/", 1)[0]
        for name in (e.path, head):
            if name in assigned:
                found = owners.get(head)
                return (Owner(assigned[name], "placed by ASSIGN", found.prefix if found else "",
                              found.display if found else head), name if name != head else "")
        return owners[head], ""

    groups: dict[tuple[str, str], list[Entry]] = {}
    group_owner: dict[tuple[str, str], Owner] = {}
    for e in entries:
        who, alone = who_of(e)
        head = e.path.split("/", 1)[0]
        if who is None or who.student is None:
            why = who.why if who else f"the name does not follow {fmt.label}'s pattern ({fmt.example})"
            report.unplaced.append(Placement(e, None, why=why, owner=who, remedy=head))     # the remedy: below
            continue
        groups.setdefault((who.student.id, alone), []).append(e)
        group_owner[(who.student.id, alone)] = who
    rows = {}
    for (sid, alone), files in sorted(groups.items()):
        who = group_owner[(sid, alone)]
        chosen, left = choose(files, released, lambda e: _file_name(e, fmt))
        for name, (e, why) in chosen.items():
            result, kept = _write(course / "submitted" / sid / assignment / name, e.data, e.when,
                                  collected / "replaced" / sid, force)
            if result == "replaced":        # graded again at the next make autograde, whatever the new file's time
                shutil.rmtree(course / "autograded" / sid / assignment, ignore_errors=True)
            report.placed.append(Placement(e, who.student, name, f"{who.why}; {why}", result=result, owner=who,
                                           kept=kept))
            if result != "older":
                rows[sid] = dict(student_id=sid, name=who.student.full_name or who.display, platform=fmt.label,
                                 prefix=who.prefix, zip=source.name, file=e.path, how=why)
        for e, why in left:
            place = command(source, assignment, course, f"{e.path}:{sid}")
            remedy = (f"nothing to do, unless it is the answer: then place it: {place}" if chosen else
                      f"place the answer: {place}")
            report.unplaced.append(Placement(e, who.student, why=why, remedy=remedy, owner=who))
    for p in report.unplaced:
        if p.student is None:           # after the placements: a student placed now has something there
            p.remedy = _remedy(p.owner, p.remedy, students, source, assignment, course)
        owner_folder = p.student.id if p.student else "_unknown"
        p.result, _ = _write(collected / "unplaced" / owner_folder / p.entry.path, p.entry.data, p.entry.when,
                             collected / "replaced" / owner_folder)
    report.cleared = _clear_unplaced(collected / "unplaced", report.placed)
    _merge_manifest(collected / "platform.csv", rows)
    placed = {p.student.id for p in report.placed}
    report.missing = [s for s in students if s.id not in placed
                      and not (course / "submitted" / s.id / assignment).is_dir()]
    return report


ASSIGNED = "assigned.txt"        # in collected/<assignment>/: the ASSIGN= given before, one <file>:<id> a line


def _remembered(collected: Path, names: set[str]) -> list[str]:
    """The ASSIGN= of earlier runs whose file this download holds too (a later zip of the same course)."""
    path = collected / ASSIGNED
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [line for line in lines if line.rpartition(":")[0] in names]


def _remember(collected: Path, assign: list[str]) -> None:
    path = collected / ASSIGNED
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    new = [part.strip() for text in assign for part in text.split(";") if part.strip()]
    files = {line.rpartition(":")[0] for line in new}
    lines = [line for line in lines if line.rpartition(":")[0] not in files] + new
    collected.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


def _remedy(who: Owner | None, head: str, students: list[rosters.Student], source: Path, assignment: str,
            course: Path) -> str:
    """What to do with a file no student of the roster was found for: the command that places it."""
    if who is not None and who.student is None and who.namesakes:
        ids = list(who.namesakes)
        ids.sort(key=lambda i: (course / "submitted" / i / assignment).is_dir())     # who has nothing there yet first
        return (f"open it to see whose it is, then place it: {command(source, assignment, course, f'{head}:{ids[0]}')}"
                + "".join(f" (or …:{i})" for i in ids[1:]))
    place = command(source, assignment, course, f"{head}:<student id>")
    if who is not None and students:
        return (f"if the student is on students.csv under another name, place it: {place}; if not on it, add them "
                "(make roster FILE=<the platform's class list> ADD=1), then run this again")
    return f"find whose it is, then place it: {place}"


def _clear_unplaced(folder: Path, placed: list[Placement]) -> int:
    """Take out of ``unplaced/`` the files placed now (the same bytes under the same name); returns how many."""
    cleared = 0
    for p in placed:
        for owner_folder in (p.student.id, "_unknown"):
            path = folder / owner_folder / p.entry.path
            if path.is_file() and path.read_bytes() == p.entry.data:
                path.unlink()
                cleared += 1
                for parent in path.parents:
                    if parent == folder or not parent.is_relative_to(folder) or any(parent.iterdir()):
                        break
                    parent.rmdir()
    return cleared


def load_roster(course: Path) -> list[rosters.Student]:
    path = course / "students.csv"
    if not path.exists():
        return []
    try:
        return rosters.read(path)[0]
    except rosters.RosterError as error:
        raise SystemExit(f"PROBLEM {error}\n  what to do: fix it, or write it again from the platform's class list: "
                         "make roster FILE=<export>") from None


def _merge_manifest(path: Path, rows: dict[str, dict]) -> None:
    """platform.csv: this zip's students replace their rows; the others stay."""
    old = {}
    if path.exists():
        with path.open(encoding="utf-8-sig", newline="") as f:
            old = {r["student_id"]: r for r in csv.DictReader(f)}
    merged = {**old, **rows}
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=MANIFEST, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(merged[k] for k in sorted(merged))
    data = ("\ufeff" + text.getvalue()).encode("utf-8")
    if not path.exists() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def manifest(course: Path, assignment: str) -> dict[str, dict]:
    """student id → the row of collected/<assignment>/platform.csv (empty when nothing was collected)."""
    path = course / "collected" / assignment / "platform.csv"
    if not path.exists():
        return {}
    with path.open(encoding="utf-8-sig", newline="") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


def _width(text: str) -> int:
    """Columns ``text`` takes in a terminal: Hangul and other wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def print_report(report: Collected, source: Path, assignment: str, course: Path, again: str) -> None:
    students = len({p.student.id for p in report.placed})
    print(f"{shown(source)}: {report.platform}; {students} students' notebooks for {assignment}"
          + (f"; {report.ignored} files ignored (.ipynb_checkpoints, __MACOSX)" if report.ignored else ""))
    width = max([_width(p.entry.path) for p in report.placed] + [4])
    for p in sorted(report.placed, key=lambda p: p.student.id):
        who = f"{p.student.id} {p.student.full_name}".strip()
        print(f"  {p.entry.path}{' ' * (width - _width(p.entry.path))}  -> {who}  [{p.result}]  ({p.why})")
        if p.result == "older":
            there = course / "submitted" / p.student.id / assignment / p.target
            print(f"      older than the one there ({datetime.fromtimestamp(there.stat().st_mtime):%Y-%m-%d %H:%M:%S}), "
                  f"which is kept and graded; this one is kept as {shown(p.kept)} (FORCE=1 puts it in place)")
        elif p.result == "replaced":
            print(f"      the one there before is kept as {shown(p.kept)}")
    if report.cleared:
        print(f"  {report.cleared} of them had been left in unplaced/ before: taken out of it")
    if report.unplaced:
        folder = course / "collected" / assignment / "unplaced"
        print(f"\nnot placed ({len(report.unplaced)}): kept in {shown(folder)}/")
        for p in report.unplaced:
            who = f" ({p.student.id})" if p.student else ""
            print(f"  {p.entry.path}{who}: {p.why}\n    what to do: {p.remedy}")
    if report.missing:
        ids = ", ".join(f"{s.id} {s.full_name}".strip() for s in report.missing[:12])
        more = f", … ({len(report.missing)} in all)" if len(report.missing) > 12 else ""
        print(f"\nno submission yet from {len(report.missing)} students of students.csv: {ids}{more}")
    counts = {r: sum(p.result == r for p in report.placed) for r in ("new", "replaced", "unchanged", "older")}
    print(f"\n{shown(course / 'submitted')}/<student>/{assignment}/: "
          + ", ".join(f"{n} {r}" for r, n in counts.items() if n or r != "older")
          + (" (older than the one there: not placed)" if counts["older"] else "")
          + (f"; {len(report.unplaced)} not placed" if report.unplaced else "")
          + f". Next: {again or 'make autograde'}")


def needs_you(report: Collected) -> list[Placement]:
    """The files left that may be an answer: no student found, or several notebooks and none named as released."""
    return [p for p in report.unplaced if p.student is None or p.why.endswith("which one is the answer?")]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="File a learning platform's zip of submissions into submitted/.")
    parser.add_argument("zip", type=Path, help="the platform's bulk download (a .zip, or the folder it unpacks to)")
    parser.add_argument("assignment", help="the assignment it is for, e.g. 01_layernorm_ko")
    parser.add_argument("--course", type=Path, default=COURSE, help="the course folder (default: classroom/course/)")
    parser.add_argument("--assign", action="append", default=[], metavar="FILE:ID",
                        help="place a file of the download (as the console names it) for the student of this id")
    parser.add_argument("--force", action="store_true", help="put a file in place even when it is older than the "
                        "one there")
    args = parser.parse_args(argv)
    course = args.course.resolve()
    if not args.zip.exists():
        parser.error(f"{args.zip}: no such file (expected the platform's download of all submissions, a .zip)")
    if args.zip.is_file() and not zipfile.is_zipfile(args.zip):
        parser.error(f"{args.zip} is not a zip file (expected the platform's download of all submissions)")
    elsewhere = course != COURSE.resolve()
    after = (f"make autograde ASSIGNMENTS={args.assignment}" + (f" COURSE={shown(course)}" if elsewhere else "")
             if os.environ.get("MAKELEVEL") else
             f"{shown(Path(sys.executable))} classroom/tools/classroom.py autograde {args.assignment}"
             + (f" --course {shown(course)}" if elsewhere else ""))
    report = collect(args.zip, args.assignment, course, assign=args.assign, force=args.force)
    print_report(report, args.zip, args.assignment, course, after)
    left = needs_you(report)
    if left:
        print(f"\nexit status 1: {len(left)} file{'s' * (len(left) != 1)} left to place (above, each with what to do); "
              "not a crash: everything else is in place")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

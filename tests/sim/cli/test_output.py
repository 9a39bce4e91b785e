"""Output paths: checked before the work without creating anything, written whole or not at all."""

import os
import stat

import pytest

from fredfab.sim.cli import UserError, main
from fredfab.sim.cli.output import atomic_path, check_file, check_folder, staged_folder, write_text


@pytest.fixture
def scratch(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    return tmp_path


def _tree(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize(
    "name,message",
    [
        ("file/x.json", "is a file, not a folder"),
        ("file/a/b/x.json", "is a file, not a folder"),
        ("dir", "is a folder; give a file name"),
        ("x.txt", "use a name ending in .json"),
    ],
)
def test_check_file_rejects_without_creating(scratch, name, message):
    before = _tree(scratch)
    with pytest.raises(UserError, match=message):
        check_file(scratch / name, suffixes=(".json",) if "." in name else ())
    assert _tree(scratch) == before


def test_check_file_and_folder_accept_missing_folders_without_making_them(scratch):
    assert check_file(scratch / "new/deeper/x.json") == scratch / "new/deeper/x.json"
    assert check_folder(scratch / "new/deeper") == scratch / "new/deeper"
    assert not (scratch / "new").exists()
    with pytest.raises(UserError, match="is a file, not a folder"):
        check_folder(scratch / "file")


def test_atomic_path_keeps_the_old_file_when_the_writer_fails(scratch):
    target = scratch / "dir" / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp.suffix == ".json"
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert _tree(scratch / "dir") == ["out.json"]


def test_write_text_replaces_whole_with_a_normal_mode(scratch):
    target = write_text(scratch / "made" / "out.txt", "new\n")
    assert target.read_text() == "new\n"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert _tree(scratch / "made") == ["out.txt"]


def test_staged_folder_publishes_only_on_success(scratch):
    with pytest.raises(RuntimeError), staged_folder(scratch / "gen") as tmp:
        (tmp / "a.v").write_text("module a; endmodule\n")
        raise RuntimeError("generator failed")
    assert _tree(scratch) == ["dir", "file"]
    with staged_folder(scratch / "gen") as tmp:
        (tmp / "a.v").write_text("module a; endmodule\n")
        (tmp / "a.json").write_text("{}\n")
    assert _tree(scratch) == ["dir", "file", "gen", "gen/a.json", "gen/a.v"]


def test_route_emit_config_writes_through_a_temporary_name(scratch, capsys):
    out = scratch / "cfg" / "c.hex"
    assert main(["route", "-P", "4", "--flow", "0-3:0-3", "--emit-config", str(out)]) == 0
    assert _tree(scratch / "cfg") == ["c.hex"]
    assert all(len(w) == 8 for w in out.read_text().split())


def test_errors_name_the_users_file_not_the_temporary_one(tmp_path):
    """A write that fails names the path the user gave (issue 25: ``-o /proc/x`` named a
    .tmp file)."""
    with pytest.raises(OSError) as err, atomic_path(tmp_path / "out.png") as tmp:
        raise OSError(28, "No space left on device", str(tmp))
    assert err.value.filename == str(tmp_path / "out.png")
    with pytest.raises(OSError) as err, staged_folder(tmp_path / "verilog") as tmp:
        raise OSError(28, "No space left on device", str(tmp / "switch.v"))
    assert err.value.filename == str(tmp_path / "verilog" / "switch.v")
    # Errors about other files pass unchanged.
    with pytest.raises(OSError) as err, atomic_path(tmp_path / "out.png"):
        raise OSError(2, "No such file or directory", "/elsewhere/input.json")
    assert err.value.filename == "/elsewhere/input.json"
    assert _tree(tmp_path) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc (Linux)")
@pytest.mark.parametrize(
    "argv,path",
    [
        (["route", "--ports=4", "--flow=0:1", "--emit-config=/proc/x.hex"], "/proc/x.hex"),
        (
            [
                "phases",
                "--fabric=mesh",
                "--strategy=MP2-DP5-PP2",
                "--size=1MiB",
                "-o",
                "/proc/x.png",
            ],
            "/proc/x.png",
        ),
        (["generate", "--ports=4", "-o", "/proc/x"], "/proc/x"),
    ],
    ids=["route", "phases", "generate"],
)
def test_an_unwritable_output_is_named_as_given(argv, path, capsys):
    """/proc takes no new files, even from root (whose access checks pass)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    # Long steps announce themselves first ("fred generate: generating ..."); the failure is
    # one line after them, naming the path the user typed.
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert len(errors) == 1 and path in errors[0]
    assert ".tmp" not in err and ".fred-" not in err

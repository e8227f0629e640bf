"""Every struct the package passes to libspillway has the C compiler's
size and field offsets (a C program compiled against include/spillway.h
prints them), so a change to the header cannot silently shift fields."""
import os
import shutil
import subprocess

import pytest

from spillway import _lib as L

from conftest import ROOT

STRUCTS = {"sw_plan_options": L.PlanOptions, "sw_sampler_options": L.SamplerOptions,
           "sw_request_options": L.RequestOptions, "sw_request_info": L.RequestInfo,
           "sw_scheduler_stats": L.SchedulerStats, "sw_chat_message": L.ChatMessage,
           "sw_special_tokens": L.SpecialTokens, "sw_draft_options": L.DraftOptions,
           "sw_plan_summary": L.PlanSummary, "sw_engine_device": L.EngineDevice}


def test_layouts(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "spillway.h"',
             "int main(void) {"]
    for cname, py in STRUCTS.items():
        lines.append('printf("%s size %%zu\\n", sizeof(%s));' % (cname, cname))
        for field, _ in py._fields_:
            lines.append('printf("%s %s %%zu\\n", offsetof(%s, %s));'
                         % (cname, field, cname, field))
    lines.append("return 0; }")
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "abi"
    subprocess.run([cc, "-I", os.path.join(ROOT, "include"), str(src), "-o", str(exe)],
                   check=True)
    got = dict(line.rsplit(" ", 1) for line in
               subprocess.run([str(exe)], capture_output=True, text=True,
                              check=True).stdout.splitlines())
    for cname, py in STRUCTS.items():
        assert int(got["%s size" % cname]) == __import__("ctypes").sizeof(py), cname
        for field, _ in py._fields_:
            assert int(got["%s %s" % (cname, field)]) == getattr(py, field).offset, \
                "%s.%s" % (cname, field)

#!/usr/bin/env python3
"""./lab profile without a GPU: the chapters' profile specs, ncu's raw CSV page, the rules that
turn a pair of counter sets into sentences, the saved runs and --compare, and the failure
paths (no GPU, no profile, a step without one). The GPU half (a starter's difference named,
the solution's none) runs on the device machine."""

import json
import os
import re
import subprocess
import sys
import tempfile
import types
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from labkit import profile_rules as pr  # noqa: E402
from labkit import timeline as tl  # noqa: E402
from labkit.core import LabError  # noqa: E402
from labkit.profile import load_spec, record, previous_run, unmet_need  # noqa: E402

# ncu 2025's raw page as --csv --page raw --print-units base writes it: a header, a units
# line, one row per launch, digits maybe grouped, ==PROF== lines around.
RAW = (
    "==PROF== Connected to process 4242 (/x/test_ch09_learner)\n"
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","gpu__time_duration.sum","l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",'
    '"sm__sass_thread_inst_executed_op_ffma_pred_on.sum"\n'
    '"","","","","","","","","","","","ns","",""\n'
    '"0","4242","test_ch09_learner","127.0.0.1","ch09::sgemm_registers_kernel(const float *, int, const float *, '
    'int, float *, int, int, int, int)","1","13","(256, 1, 1)","(64, 1, 1)","0","9.0","1,234,567","10,485,760",'
    '"1,073,741,824"\n'
    "==PROF== Disconnected from process 4242\n")

PER_FFMA = pr.Counter("wavefronts per warp FFMA", ("w", "f"), "higher", 0.25, "fewer words per FFMA", 4, scale=32)


class Specs(unittest.TestCase):
    def test_every_chapters_profile_parses_and_names_kernels_the_code_has(self):
        specs = sorted((ROOT / "chapters").glob("*/profile.json"))
        self.assertGreaterEqual(len(specs), 3)
        for path in specs:
            spec = pr.parse_spec(path.read_text(), str(path))
            name = path.parent.name
            if isinstance(spec, pr.TimelineSpec):
                program = (ROOT / "chapters" / name / "main.cu").read_text() + "".join(
                    p.read_text() for p in (ROOT / "chapters" / name).glob("program/*.cu"))
                self.assertIn(f'"{spec.file}"', program, f"{name}: the program never writes {spec.file}")
                self.assertIn(f"| {spec.step} |", (ROOT / "chapters" / name / "README.md").read_text())
                continue
            exercise = (ROOT / "chapters" / name / "exercise.cu").read_text()
            solution = (ROOT / "solutions" / name / "exercise.cu").read_text()
            readme = (ROOT / "chapters" / name / "README.md").read_text()
            for step, s in spec.steps.items():
                for text, where in ((exercise, "exercise.cu"), (solution, "the solution")):
                    found = re.search(r"__global__[^;{]{0,200}?\b" + re.escape(s.kernel) + r"\s*\(", text)
                    self.assertTrue(found, f"{name} step {step}: no kernel {s.kernel} in {where}")
                self.assertIn(f"| {step} |", readme, f"{name}: step {step} is not in the README's table")
                self.assertTrue(spec.counters_of(step), f"{name} step {step} reads no counter")
                self.assertEqual(spec.metrics_of(step)[0], pr.DURATION)
            tests = "".join(q.read_text() for q in (ROOT / "tests").glob(f"test_{name}.*")) + "".join(
                q.read_text() for q in (ROOT / "chapters" / name).glob("harness.*"))
            for step, s in spec.steps.items():
                # the [.target] case knows the name, whole or as "timed-" + a variant's name;
                # "kernels" is the case that launches all the chapter's kernels once each
                named = f'"{s.target}"' in tests or (
                    s.target.startswith("timed-") and f'"{s.target[len("timed-"):]}"' in tests and '"timed-' in tests
                ) or (s.target == "kernels" and "profile target: the chapter's kernels once each" in tests)
                self.assertTrue(named, f"{name} step {step}: no [.target] case launches {s.target!r}")
            for c in spec.counters:
                self.assertIn(f"| {c.step} |", readme, f"{name}: '{c.label}' points at a step the README lacks")
                for m in c.metrics:
                    self.assertRegex(m, r"^([a-z0-9]+__[a-z0-9_]+\.(sum|avg|max)(\.[a-z_]+)?|launch__[a-z_]+)$",
                                     f"{name}: {m}")

    def test_a_spec_that_lacks_a_part_is_refused_with_what_is_missing(self):
        with self.assertRaisesRegex(pr.SpecError, "'steps' is missing"):
            pr.parse_spec('{"what": "x", "counters": []}')
        with self.assertRaisesRegex(pr.SpecError, "not JSON"):
            pr.parse_spec("{")
        bad = {"what": "x", "steps": {"1": {"kernel": "k", "target": "t"}},
               "counters": [{"label": "c", "metric": "a__b.sum", "worse": "up", "tolerance": 0.1, "meaning": "m", "step": 1}]}
        with self.assertRaisesRegex(pr.SpecError, "higher or lower"):
            pr.parse_spec(json.dumps(bad))


class RecordedPairs(unittest.TestCase):
    """Counter sets of real kernels, recorded on a GPU with ./lab profile NN --record starter
    (the shipped starter as the learner's file) or --record solution (the solution in its
    place): a starter's pair must name a difference, a solution's none."""

    def test_each_recorded_pair_gives_the_verdict_its_file_calls_for(self):
        fixtures = sorted((ROOT / "tests" / "cpu" / "fixtures" / "profile").glob("*.json"))
        if not fixtures:
            self.skipTest("no recorded pairs yet: ./lab profile NN --record starter|solution on a GPU makes them")
        for path in fixtures:
            f = json.loads(path.read_text())
            spec = pr.parse_spec((ROOT / "chapters").glob(f"{f['chapter']}_*/profile.json").__next__().read_text())
            rows = pr.compare(spec.counters_of(f["step"]), f["yours"], f["solution"], f["chapter"])
            rows += pr.stall_rows(spec.stalls_of(f["step"]), f["yours"], f["solution"], f["chapter"])
            differs = [r.label for r in rows if r.differs]
            with self.subTest(fixture=path.name, gpu=f["gpu"], date=f["date"]):
                if f.get("known_gap"):
                    # A pair the chapter's counters do not yet tell apart, said in the file; a
                    # new recording replaces it (and then must name the difference).
                    self.assertEqual(differs, [], f"{path.name}: its gap is closed; drop 'known_gap'")
                elif f["learner_file"] in ("starter", "attempt"):
                    self.assertTrue(differs, f"{path.name}: the {f['learner_file']}'s counters match the solution's")
                else:
                    self.assertEqual(differs, [], f"{path.name}: the solution differs from itself")


class NcuCsv(unittest.TestCase):
    def test_the_raw_page_gives_each_launch_its_metrics_in_base_units(self):
        launches = pr.parse_ncu_csv(RAW)
        self.assertEqual(len(launches), 1)
        k = pr.launch_of(launches, "sgemm_registers_kernel")
        self.assertIsNotNone(k)
        self.assertEqual(k["values"]["gpu__time_duration.sum"], 1234567.0)
        self.assertEqual(k["values"]["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"], 1073741824.0)
        self.assertIsNone(pr.launch_of(launches, "sgemm_tma_kernel"))

    def test_no_header_means_no_launch(self):
        self.assertEqual(pr.parse_ncu_csv("==PROF== No kernels were profiled.\n"), [])


class Rules(unittest.TestCase):
    def test_a_counter_worse_past_its_tolerance_is_named_with_its_step_and_hint(self):
        rows = pr.compare([PER_FFMA], {"w": 20.0, "f": 2048.0}, {"w": 12.0, "f": 2048.0}, "09")
        self.assertAlmostEqual(rows[0].yours, 0.3125)
        self.assertAlmostEqual(rows[0].reference, 0.1875)
        self.assertTrue(rows[0].differs)
        self.assertIn("fewer words per FFMA (step 4; ./lab hint 09 --step 4)", rows[0].sentence)

    def test_equal_or_better_counters_say_nothing(self):
        same = pr.compare([PER_FFMA], {"w": 12.0, "f": 2048.0}, {"w": 12.0, "f": 2048.0}, "09")
        better = pr.compare([PER_FFMA], {"w": 6.0, "f": 2048.0}, {"w": 12.0, "f": 2048.0}, "09")
        within = pr.compare([PER_FFMA], {"w": 14.0, "f": 2048.0}, {"w": 12.0, "f": 2048.0}, "09")
        for rows in (same, better, within):
            self.assertFalse(rows[0].differs)
            self.assertEqual(rows[0].sentence, "")

    def test_against_a_zero_reference_the_floor_sets_how_much_is_a_difference(self):
        c = pr.Counter("conflicts per load", ("c", "l"), "higher", 0.5, "pad", 2, floor=0.1)
        self.assertFalse(pr.compare([c], {"c": 4.0, "l": 100.0}, {"c": 0.0, "l": 100.0}, "05")[0].differs)
        self.assertTrue(pr.compare([c], {"c": 3100.0, "l": 100.0}, {"c": 0.0, "l": 100.0}, "05")[0].differs)

    def test_near_zero_in_the_solution_the_floor_keeps_noise_from_being_a_difference(self):
        # Recorded on an H200: the solution against itself read 0.000206 and 0.000088
        # conflicts per load, a factor 2.3 of nothing.
        c = pr.Counter("conflicts per load", ("c", "l"), "higher", 0.5, "pad", 2, floor=0.1)
        self.assertFalse(pr.compare([c], {"c": 0.0206, "l": 100.0}, {"c": 0.0088, "l": 100.0}, "05")[0].differs)

    def test_stall_rows_show_the_top_reasons_and_name_only_those_with_a_meaning(self):
        st = pr.Stalls((2,), top=2, tolerance=0.5, floor=0.5, meanings={"short_scoreboard": ("same row", 2)})
        m = pr.stall_metric
        yours = {m("short_scoreboard"): 6.0, m("long_scoreboard"): 3.0, m("barrier"): 0.1}
        ref = {m("short_scoreboard"): 0.4, m("long_scoreboard"): 9.0, m("barrier"): 0.1}
        rows = pr.stall_rows(st, yours, ref, "06")
        self.assertEqual([r.label for r in rows], ["stalled on long_scoreboard (warps per issue)",
                                                   "stalled on short_scoreboard (warps per issue)"])
        self.assertFalse(rows[0].differs)
        self.assertTrue(rows[1].differs)
        self.assertIn("same row (step 2; ./lab hint 06 --step 2)", rows[1].sentence)
        self.assertEqual(pr.stall_rows(None, yours, ref, "06"), [])

    def test_a_much_slower_kernel_with_no_differing_counter_is_sent_to_the_launch_and_the_check(self):
        one = {"launch__grid_size": 1.0, "launch__block_size": 256.0, "launch__sm_count": 132.0}
        many = {"launch__grid_size": 1056.0, "launch__block_size": 256.0, "launch__sm_count": 132.0}
        self.assertIn("yours 1 block (0.00758 a SM) of 256 threads; solution 1,056 blocks (8 a SM)",
                      pr.launch_line(one, many))
        self.assertEqual(pr.launch_line(many, many), "  launch: both 1,056 blocks (8 a SM) of 256 threads")
        same = pr.Row("x", 1.0, 1.0, False, "")
        self.assertIn("601.87× the solution's time", pr.slower_unexplained([same], (5913.0, 9.824, 601.87), "04"))
        self.assertEqual(pr.slower_unexplained([same], (10.0, 9.0, 1.11), "04"), "")

    def test_lower_is_worse_where_the_spec_says_so(self):
        c = pr.Counter("hit rate", ("h",), "lower", 0.1, "keep it in L2", 5)
        self.assertTrue(pr.compare([c], {"h": 0.5}, {"h": 0.9}, "04")[0].differs)
        self.assertFalse(pr.compare([c], {"h": 0.95}, {"h": 0.9}, "04")[0].differs)

    def test_a_missing_metric_is_shown_as_unknown_never_as_a_difference(self):
        row = pr.compare([PER_FFMA], {"w": 20.0}, {"w": 12.0, "f": 2048.0}, "09")[0]
        self.assertIsNone(row.yours)
        self.assertFalse(row.differs)
        self.assertIn(" - ", " ".join(pr.table_lines([row], (None, None, None))))

    def test_the_table_gives_the_duration_ratio_and_each_sentence(self):
        rows = pr.compare([PER_FFMA], {"w": 20.0, "f": 2048.0}, {"w": 12.0, "f": 2048.0}, "09")
        text = "\n".join(pr.table_lines(rows, pr.duration_row({pr.DURATION: 3400000.0}, {pr.DURATION: 3000000.0})))
        self.assertIn("1.13× the solution's time", text)
        self.assertIn("← differs", text)
        self.assertIn("./lab hint 09 --step 4", text)


class SavedRuns(unittest.TestCase):
    def result(self, yours):
        rows = pr.compare([PER_FFMA], {"w": yours, "f": 2048.0}, {"w": 12.0, "f": 2048.0}, "09")
        return {"chapter": "09", "step": 4, "kernel": "k", "duration_us": 10.0, "reference_duration_us": 9.0,
                "rows": [r.__dict__ for r in rows]}

    def test_a_run_is_saved_whole_as_json_and_csv_and_last_finds_the_one_before(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            first = record(folder, "step4-20261205-100000", self.result(20.0))
            second = record(folder, "step4-20261205-110000", self.result(12.0))
            self.assertEqual(sorted(p.suffix for p in folder.iterdir()), [".csv", ".csv", ".json", ".json"])
            self.assertEqual(previous_run(folder, 4, "last", second), first)
            lines = pr.compare_runs(json.loads(second.read_text()), json.loads(first.read_text()))
            self.assertTrue(any("0.6" in l and "wavefronts" in l for l in lines), lines)


class Timeline(unittest.TestCase):
    """On traces recorded by chapter 02's program (docs/figures/02_streams: NVIDIA H200,
    2026-11-22, 256 MiB at the balanced point)."""

    def trace(self, name):
        return tl.parse_trace((ROOT / "docs" / "figures" / "02_streams" / f"timeline_{name}.csv").read_text())

    def test_the_staged_run_overlaps_as_the_program_said_and_the_sequential_one_does_not(self):
        staged, sequential = tl.summarize(self.trace("staged")), tl.summarize(self.trace("sequential"))
        self.assertAlmostEqual(staged.copy_kernel, 0.85, delta=0.01)   # docs/02_streams.md: 85 %
        self.assertLess(sequential.copy_kernel, 0.01)
        self.assertLess(staged.span_us, sequential.span_us / 2)

    def test_a_row_per_engine_or_per_stream_marks_when_each_ran(self):
        rows = tl.render(self.trace("sequential"), width=30)
        self.assertEqual([r.split("|")[0].strip() for r in rows[:3]],
                         ["copies host→device", "copies device→host", "kernels"])
        self.assertTrue(rows[0].split("|")[1].startswith(">"))          # copy-in first
        self.assertTrue(rows[1].split("|")[1].endswith("<"))            # copy-out last
        streams = tl.render(self.trace("staged"), by="stream")
        self.assertEqual(sum(1 for r in streams if r.strip().startswith("stream")), 4)

    def test_a_learner_trace_without_overlap_is_named_against_the_solutions(self):
        spec = pr.parse_spec((ROOT / "chapters" / "02_streams" / "profile.json").read_text())
        staged, sequential = tl.summarize(self.trace("staged")), tl.summarize(self.trace("sequential"))
        said = pr.timeline_findings(sequential, staged, spec, "02")
        self.assertTrue(any("overlapped 0% of your span against 85%" in s and "--step 1" in s for s in said), said)
        self.assertEqual(pr.timeline_findings(staged, staged, spec, "02"), [])

    def test_two_recorded_runs_share_one_scale_the_longer_runs(self):
        # ./lab profile 02 on an H200, 2026-12-06: the shipped starter (pageable, one stream)
        # and the solution, as the learner's file.
        f = ROOT / "tests" / "cpu" / "fixtures" / "profile"
        starter = tl.parse_trace((f / "02_timeline_staged_starter_h200.csv").read_text())
        solution = tl.parse_trace((f / "02_timeline_staged_solution_h200.csv").read_text())
        span = tl.common_span([starter, solution])
        self.assertAlmostEqual(span / 1000, 106338.2, delta=0.1)        # the starter's whole run
        mine = tl.render(starter, span=(0, span))
        theirs = tl.render(solution, span=(0, span))
        self.assertTrue(mine[1].split("|")[1].endswith("<"))            # its copy-out ends the scale
        self.assertEqual(theirs[0].split("|")[1].rstrip(), ">" * 4)     # 6 ms of 106: the first cells
        spec = pr.parse_spec((ROOT / "chapters" / "02_streams" / "profile.json").read_text())
        said = pr.timeline_findings(tl.summarize(starter), tl.summarize(solution), spec, "02")
        self.assertTrue(any("overlapped 0% of your span against 84%" in s for s in said), said)
        self.assertTrue(said[0].startswith("2 of your copies moved pageable host memory (the solution's: 0)"), said)

    def test_overlap_is_the_time_both_sets_share_over_their_span(self):
        self.assertAlmostEqual(tl.overlap_fraction([(0, 10)], [(5, 20)]), 5 / 20)
        self.assertEqual(tl.overlap_fraction([(0, 10)], [(10, 20)]), 0.0)
        self.assertEqual(tl.shared([(0, 4), (2, 6)], [(3, 5)]), 2)
        self.assertEqual(tl.render([]), ["(the trace is empty)"])


class TimelineChecks(unittest.TestCase):
    """The checks chapters 01 and 03 judge a trace on: copies, pageable memory, page faults.
    Their traces are written by the programs (timeline_send_batched.csv, timeline_threads.csv);
    the CSV rows here are in that format, made by hand where no recorded run exists yet."""

    CSV = ("type,name,kind,src,dst,bytes,stream,start_ns,end_ns,count\n"
           "copy,,HtoD,pageable,device,4096,7,0,2000,\n"
           "copy,,HtoD,pinned,device,65536,7,2500,9000,\n"
           "kernel,unpack,,,,,7,9500,12000,\n"
           "unified,,bytes_HtoD,,,2097152,,12000,20000,\n"
           "unified,,gpu_page_fault,,,,,13000,13000,37\n"
           "unified,,cpu_page_fault,,,,,21000,21000,5\n"
           "copy,,DtoH,device,pageable,4096,7,22000,23000,\n")

    def spec(self, chapter):
        return pr.parse_spec(next((ROOT / "chapters").glob(f"{chapter}_*/profile.json")).read_text())

    def test_unified_instants_are_kept_with_their_counts_and_copies_with_their_memory(self):
        acts = tl.parse_trace(self.CSV)
        self.assertEqual(len(acts), 7)
        s = tl.summarize(acts)
        self.assertEqual((s.htod_copies, s.dtoh_copies, s.pageable_copies, s.kernels), (2, 1, 2, 1))
        self.assertEqual((s.gpu_faults, s.migrated_bytes), (37, 2097152))
        rows = tl.render(acts, width=23)
        faults = next(r for r in rows if r.strip().startswith("GPU page faults"))
        self.assertEqual(faults.split("|")[1].count("!"), 1)
        self.assertIn("unified memory: 37 GPU page faults, 2.0 MiB migrated", s.lines()[2])

    def test_a_trace_of_the_old_format_still_parses(self):
        old = "type,name,kind,src,dst,bytes,stream,start_ns,end_ns\ncopy,,HtoD,pinned,device,8,1,0,10\n"
        self.assertEqual(tl.summarize(tl.parse_trace(old)).gpu_faults, 0)

    def test_many_small_copies_from_pageable_memory_are_named_pageable_first(self):
        spec = self.spec("01")
        ref = tl.Summary(400.0, 0.0, 0.0, 10.0, 5.0, htod_copies=16, kernels=1)
        mine = tl.Summary(9000.0, 0.0, 0.0, 4000.0, 30.0, htod_copies=1000, pageable_copies=1000, kernels=1)
        said = pr.timeline_findings(mine, ref, spec, "01")
        self.assertEqual(len(said), 3, said)
        self.assertTrue(said[0].startswith("1000 of your copies moved pageable host memory (the solution's: 0)"))
        self.assertIn("your run issued 1000 host→device copies against the solution's 16", said[1])
        self.assertTrue(all("(step 2; ./lab hint 01 --step 2)" in s for s in said), said)
        # a few more copies than the solution's, all pinned: nothing to say
        self.assertEqual(pr.timeline_findings(tl.Summary(420.0, 0, 0, 12.0, 5.0, htod_copies=24), ref, spec, "01"),
                         [])

    def test_page_faults_past_the_solutions_send_to_prefetch(self):
        spec = self.spec("03")
        ref = tl.Summary(9e5, 0, 0, 1e3, 10.0, gpu_faults=40, migrated_bytes=256 << 20)
        said = pr.timeline_findings(tl.Summary(9e5, 0, 0, 1e3, 10.0, gpu_faults=9000), ref, spec, "03")
        self.assertEqual(len(said), 1, said)
        self.assertIn("the GPU took 9,000 page faults in your run against the solution's 40", said[0])
        self.assertIn("prefetch", said[0])
        self.assertIn("--step 4", said[0])
        self.assertEqual(pr.timeline_findings(tl.Summary(9e5, 0, 0, 1e3, 10.0, gpu_faults=70), ref, spec, "03"), [])

    def test_host_waits_are_their_own_lane_and_leave_the_gpus_span_and_gaps_alone(self):
        csv = self.CSV + ("host,cudaStreamSynchronize,blocked,,,,,2000,9000,\n"
                          "host,cudaMemcpy,blocked,,,,,21000,23000,\n"
                          "host,cudaStreamSynchronize,blocked,,,,,24000,30000,\n")
        acts = tl.parse_trace(csv)
        s, gpu_only = tl.summarize(acts), tl.summarize(tl.parse_trace(self.CSV))
        self.assertEqual((s.span_us, s.idle_us), (gpu_only.span_us, gpu_only.idle_us))
        self.assertAlmostEqual(s.host_waited_us, 15.0)
        self.assertEqual(s.host_calls, "cudaStreamSynchronize 13 µs, cudaMemcpy 2 µs")
        lane = next(r for r in tl.render(acts, width=30) if r.strip().startswith(tl.HOST_LANE))
        self.assertIn("H", lane.split("|")[1])
        self.assertIn("the host waited 15 µs inside CUDA calls: cudaStreamSynchronize 13 µs", "\n".join(s.lines()))

    def test_a_host_that_waits_in_cuda_calls_is_named_with_the_calls(self):
        spec = self.spec("03")
        ref = tl.Summary(9e5, 0, 0, 1e3, 10.0, host_waited_us=40.0, host_calls="cudaMemPrefetchAsync 40 µs")
        mine = tl.Summary(9e5, 0, 0, 1e3, 10.0, host_waited_us=250000.0,
                          host_calls="cudaStreamSynchronize 249,000 µs, cudaLaunchKernel 1,000 µs")
        said = pr.timeline_findings(mine, ref, spec, "03")
        self.assertEqual(len(said), 1, said)
        self.assertIn("your host waited 250,000 µs inside CUDA calls (cudaStreamSynchronize 249,000 µs", said[0])
        self.assertIn("--step 3", said[0])
        near = tl.Summary(9e5, 0, 0, 1e3, 10.0, host_waited_us=270.0, host_calls="cudaMalloc 270 µs")
        self.assertEqual(pr.timeline_findings(near, ref, spec, "03"), [])

    def recorded(self, name):
        return tl.summarize(tl.parse_trace((ROOT / "tests" / "cpu" / "fixtures" / "profile" / name).read_text()))

    def findings(self, chapter, mine, ref):
        """What ./lab profile NN says of `mine` against `ref` (trace summaries)."""
        return pr.timeline_findings(mine, ref, self.spec(chapter), chapter)

    def test_recorded_on_an_h100_the_starters_thousand_copies_are_named_against_the_solutions_eight(self):
        # ./lab profile 01 --record starter, NVIDIA H100 80GB HBM3, 2026-12-05.
        mine = self.recorded("01_timeline_send_batched_starter_h100.csv")
        ref = self.recorded("01_timeline_send_batched_solution_h100.csv")
        self.assertEqual((mine.htod_copies, ref.htod_copies, ref.kernels), (1024, 8, 1))
        said = self.findings("01", mine, ref)
        self.assertEqual(len(said), 1, said)
        self.assertIn("your run issued 1024 host→device copies against the solution's 8", said[0])

    def test_recorded_on_an_h100_the_pageable_starter_is_told_its_copies_and_its_waits(self):
        # ./lab profile 02 --record starter, NVIDIA H100 80GB HBM3, 2026-12-05: pageable
        # buffers, one stream; the host waited 114 ms inside its two cudaMemcpyAsync calls.
        mine = self.recorded("02_timeline_staged_starter_h100.csv")
        ref = self.recorded("02_timeline_staged_solution_h100.csv")
        said = self.findings("02", mine, ref)
        self.assertTrue(said[0].startswith("2 of your copies moved pageable host memory"), said)
        self.assertTrue(any("your host waited 114,037 µs inside CUDA calls (cudaMemcpyAsync" in s for s in said), said)
        self.assertEqual(self.findings("02", ref, ref), [])

    def test_recorded_on_an_h100_the_solutions_lanes_show_their_migrations_and_few_faults(self):
        # ./lab profile 03 --record solution, NVIDIA H100 80GB HBM3, 2026-12-05: 4 lanes x 4
        # rounds over 256 MiB, prefetched both ways.
        ref = self.recorded("03_timeline_threads_solution_h100.csv")
        self.assertEqual((ref.kernels, ref.gpu_faults), (16, 41))
        self.assertAlmostEqual(ref.migrated_bytes / 2**20, 2052.0, delta=0.5)
        self.assertIn("cudaMemPrefetchAsync", ref.host_calls)
        self.assertEqual(self.findings("03", ref, ref), [])

    def test_recorded_on_an_h200_the_starters_copies_come_first_then_the_idle_gpu(self):
        # ./lab profile 01 and 03 --record, NVIDIA H200, 2026-12-06. Here the starter's GPU also
        # sat idle 2.5 ms between its 1024 copies, against 0.87 ms: a second finding, after the
        # copies, pointing at the same step.
        mine = self.recorded("01_timeline_send_batched_starter_h200.csv")
        ref = self.recorded("01_timeline_send_batched_solution_h200.csv")
        self.assertEqual((mine.htod_copies, ref.htod_copies, ref.kernels), (1024, 8, 1))
        said = self.findings("01", mine, ref)
        self.assertEqual(len(said), 2, said)
        self.assertIn("your run issued 1024 host→device copies against the solution's 8", said[0])
        self.assertIn("the GPU sat idle 2,523 µs between your operations against 872", said[1])
        self.assertTrue(all("(step 2; ./lab hint 01 --step 2)" in s for s in said), said)
        self.assertEqual(self.findings("01", ref, ref), [])
        lanes = self.recorded("03_timeline_threads_solution_h200.csv")
        self.assertEqual((lanes.kernels, lanes.gpu_faults), (16, 27))
        self.assertAlmostEqual(lanes.migrated_bytes / 2**20, 2052.0, delta=0.5)
        self.assertEqual(self.findings("03", lanes, lanes), [])

    def test_recorded_on_an_h200_lanes_without_a_prefetch_are_told_their_launches_moved_the_data(self):
        # ./lab profile 03 --record attempt, NVIDIA H200, 2026-12-06: the solution with its prefetch
        # to the GPU removed (tools/mutant_cases/ch03.py, "no prefetch to the GPU"). Its kernels
        # took as long as the solution's but for the first, and about as many faults: all 1,028 MiB that
        # moved to the GPU moved while a thread was inside cudaLaunchKernel (78 ms of launches
        # against 25). Set beside the H200 solution recorded a day before, on the same machine kind.
        mine = self.recorded("03_timeline_threads_attempt_h200.csv")
        ref = self.recorded("03_timeline_threads_solution_h200.csv")
        self.assertEqual((mine.kernels, mine.gpu_faults), (16, 35))
        self.assertAlmostEqual(mine.launch_htod_share, 1.0, places=3)
        self.assertLess(ref.launch_htod_share, 0.3)
        said = self.findings("03", mine, ref)
        self.assertTrue(said[0].startswith("100% of the bytes that moved to the GPU moved while your thread was "
                                           "inside cudaLaunchKernel (the solution's: 22%)"), said)
        self.assertIn("(step 4; ./lab hint 03 --step 4)", said[0])
        h100 = self.recorded("03_timeline_threads_solution_h100.csv")
        self.assertEqual(self.findings("03", h100, ref), [])

    def test_a_launch_share_within_the_tolerance_says_nothing(self):
        spec = self.spec("03")
        ref = tl.Summary(9e5, 0, 0, 1e3, 10.0, launch_htod_share=0.2)
        self.assertEqual(pr.timeline_findings(tl.Summary(9e5, 0, 0, 1e3, 10.0, launch_htod_share=0.55), ref, spec,
                                              "03"), [])
        said = pr.timeline_findings(tl.Summary(9e5, 0, 0, 1e3, 10.0, launch_htod_share=0.9), ref, spec, "03")
        self.assertEqual(len(said), 1, said)
        self.assertIn("inside cudaLaunchKernel", said[0])

    def test_only_migrations_that_begin_inside_a_launch_count_as_moved_by_it(self):
        csv_text = ("type,name,kind,src,dst,bytes,stream,start_ns,end_ns,count\n"
                    "host,cudaLaunchKernel,blocked,,,,,1000,5000,\n"
                    "host,cudaMemPrefetchAsync,blocked,,,,,6000,9000,\n"
                    "unified,,bytes_HtoD,,,300,,2000,4000,\n"
                    "unified,,bytes_HtoD,,,100,,7000,8000,\n"
                    "unified,,bytes_DtoH,,,900,,2500,3000,\n"
                    "kernel,k,,,,,7,10000,12000,\n")
        s = tl.summarize(tl.parse_trace(csv_text))
        self.assertAlmostEqual(s.launch_htod_share, 0.75)

    def test_an_unknown_check_is_refused_with_the_known_ones(self):
        bad = json.dumps({"what": "x", "timeline": {"file": "t.csv", "step": 1,
                                                    "checks": [{"kind": "speed", "step": 1, "meaning": "m"}]}})
        with self.assertRaises(pr.SpecError) as e:
            pr.parse_spec(bad)
        self.assertIn("no check 'speed' (overlap, idle, copies, pageable, faults, blocked, launch)", str(e.exception))


class Needs(unittest.TestCase):
    """A step whose kernel this GPU cannot run (needs.txt) is skipped with the reason, not
    profiled into ncu's 'no launch'."""

    def test_a_step_above_the_gpus_compute_capability_is_named_with_what_it_needs(self):
        why = unmet_need("08", 4, (8, 9))
        self.assertIn("step 4 needs compute capability 9.0", why)
        self.assertIn("this GPU has 8.9", why)
        self.assertEqual(unmet_need("08", 3, (8, 9)), "")
        self.assertEqual(unmet_need("08", 5, (9, 0)), "")

    def test_a_chapter_wide_need_covers_every_step(self):
        self.assertTrue(all(unmet_need("07", k, (7, 5)) for k in (1, 2, 3, 4)))
        self.assertEqual(unmet_need("09", 3, (7, 5)), "")

    def test_an_unknown_capability_never_skips(self):
        self.assertEqual(unmet_need("08", 5, None), "")


class CommandLine(unittest.TestCase):
    def lab(self, *args, env=None):
        e = dict(os.environ, CML_LAB_NO_INSTALL="1", **(env or {}))
        return subprocess.run([sys.executable, str(ROOT / "lab"), *args], capture_output=True, text=True, env=e,
                              timeout=120)

    def test_every_chapter_has_a_profile_and_one_without_says_which_do_and_skips(self):
        have = sorted(p.parent.name[:2] for p in (ROOT / "chapters").glob("*/profile.json"))
        every = sorted(p.name[:2] for p in (ROOT / "chapters").iterdir() if (p / "exercise.cu").exists())
        self.assertEqual(have, every)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "chapters" / "04_x").mkdir(parents=True)
            (Path(tmp) / "chapters" / "05_y").mkdir(parents=True)
            (Path(tmp) / "chapters" / "05_y" / "profile.json").write_text("{}")
            with self.assertRaises(LabError) as e:
                load_spec(types.SimpleNamespace(num="04", folder=Path(tmp) / "chapters" / "04_x"), Path(tmp))
        self.assertEqual(e.exception.code, 77)
        self.assertIn("chapter 04 has no profile yet (chapters with one: 05)", str(e.exception))

    def test_a_step_without_a_profile_is_a_usage_error(self):
        r = self.lab("profile", "09", "--step", "9")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("steps with one: 1, 2, 3, 4, 5, 6", r.stderr)

    def test_a_trace_profile_takes_only_its_step(self):
        r = self.lab("profile", "02", "--step", "3")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--step 1 or none", r.stderr)

    def test_no_gpu_is_one_line_and_exit_77(self):
        r = self.lab("profile", "09", "--step", "4", env={"CUDA_VISIBLE_DEVICES": ""})
        self.assertEqual(r.returncode, 77, r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("no NVIDIA GPU here", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""One entry class in one process: ``python -m tracer.verify.worker``.

``tracer verify --all`` starts one of these per entry class (SGLang keeps
process-wide singletons, and a class that crashes, hangs or eats memory must
cost only its own rows; on the CPU it is forked from ``zygote.py``, which
imported torch and the framework once). It derives the family from the release, runs every
protocol asked for (a fresh build each), and appends one JSON line per
protocol to ``--out`` as soon as it is done, so a crash in a later protocol
keeps the earlier results.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tracer.verify.worker")
    parser.add_argument("--framework", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--entry", required=True, help="dotted qualname or class name")
    parser.add_argument("--protocol", action="append", required=True,
                        help="PROTOCOL=IDS, e.g. sglang-eagle3=0,3,5 (IDS 'none' for no ids)")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--target-config", default=None)
    parser.add_argument("--graph", action="store_true", help="capture and replay a CUDA graph")
    parser.add_argument("--family", default=None, help="use this hand-written family (reference weights)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    from . import adapters, harness, stubs
    from .families import FAMILIES, load_json_config, shrink_config, tiny_config

    started = time.time()
    release = adapters.locate(args.framework)
    adapter = adapters.adapter_for(release, args.device)
    adapter.prepare_process()
    adapter.init_distributed()
    target_raw = load_json_config(args.target_config) if args.target_config else None
    with open(args.out, "a") as out:
        for spec in args.protocol:
            protocol, _, ids_text = spec.partition("=")
            ids = None if ids_text.strip().lower() in ("", "none") else [int(x) for x in ids_text.split(",")]
            if not adapter.setter_order(protocol):
                record = {"error": f"{release.layout} layout: this release's runner has no {protocol} call",
                          "stage": "protocol"}
            elif args.family:
                family = FAMILIES[args.family]
                raw = (shrink_config(target_raw, args.layers) if target_raw is not None
                       else tiny_config(family, args.layers))
                record = harness.run_case(adapter, family, raw, ids, args.device, args.graph, protocol)
            else:
                record = harness.run_derived(adapter, args.entry, protocol, ids, args.device, args.graph,
                                             args.layers, target_raw)
            record.update(entry=args.entry, protocol=protocol, runner_ids=ids, pid=os.getpid())
            if args.device == "cuda":
                import torch

                record["device_name"] = torch.cuda.get_device_name(0)
            out.write(json.dumps(record, default=str) + "\n")
            out.flush()
    if adapters.DROPPED_KWARGS:
        adapter._note("TorchNativeAttnBackend.forward_extend/forward_decode drop keyword arguments they do not "
                      "take: " + ", ".join(sorted(adapters.DROPPED_KWARGS)) + " (attention numbers only)")
    with open(args.out, "a") as out:
        out.write(json.dumps({"done": True, "stubs": stubs.installed(), "patches": list(dict.fromkeys(adapter.patches)),
                              "stub_names_read": stubs.report(), "seconds": round(time.time() - started, 2),
                              "framework": {"root": release.root, "version": release.version,
                                            "layout": release.layout}}, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

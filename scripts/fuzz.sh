#!/usr/bin/env bash
# The fuzz targets of Fuzz/ (issue 11) under libFuzzer and AddressSanitizer.
#
#   scripts/fuzz.sh run [TARGET...]     each target for FUZZ_SECONDS (default 60),
#                                       with FUZZ_OPTIONS passed to libFuzzer
#   scripts/fuzz.sh merge [TARGET...]   add what the runs found that covers new
#                                       code to Fuzz/Corpus, at most
#                                       FUZZ_MERGE_LIMIT (25) per target (commit it)
#
# `make fuzz` and `make fuzz-merge` call it. A run starts from the committed
# corpus, Fuzz/Corpus/<target>, and writes what it discovers to a working
# corpus under .build-fuzz, so the committed one only grows when asked. A
# crash or a property violation leaves its input in .build-fuzz/artifacts;
# `oauth2-fuzz run TARGET FILE` replays it in an ordinary build. Prints one
# line per target (time, executions, new inputs, finding) and fails when
# any target found something.
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFT=${SWIFT:-swift}
seconds=${FUZZ_SECONDS:-60}
scratch=.build-fuzz
mode=${1:-run}
shift || true
if [ "$#" -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(ls Fuzz/Corpus); fi

# Release, for executions per second. swiftc keeps only the last -sanitize=
# option it is given, and SwiftPM gives one per sanitizer, so Swift code would
# get AddressSanitizer without coverage and libFuzzer would explore blind: the
# -Xswiftc option, which comes last, asks for both at once.
build=("$SWIFT" build -c release --product oauth2-fuzz --sanitize=fuzzer --sanitize=address
       -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING --scratch-path "$scratch")
mkdir -p "$scratch/logs" "$scratch/artifacts"
# The linker warns about every ASan symbol it cannot export; the log keeps them out of sight.
if ! "${build[@]}" >"$scratch/logs/build.log" 2>&1; then
    grep -v "Cannot export local symbol" "$scratch/logs/build.log" >&2
    exit 1
fi
binary="$("${build[@]}" --show-bin-path)/oauth2-fuzz"

# libFuzzer reports a crash itself and saves the input; Swift's backtracer would get in its way.
export SWIFT_BACKTRACE=enable=no
status=0
for target in "${targets[@]}"; do
    [ -d "Fuzz/Corpus/$target" ] || { echo "fuzz: no target $target (Fuzz/Corpus has $(ls Fuzz/Corpus | tr '\n' ' '))" >&2; exit 64; }
    work="$scratch/corpus/$target"
    mkdir -p "$work"
    case "$mode" in
    run)
        options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1
                 -artifact_prefix="$scratch/artifacts/$target-")
        [ -f "Fuzz/Dictionaries/$target.dict" ] && options+=(-dict="Fuzz/Dictionaries/$target.dict")
        # More libFuzzer options, e.g. FUZZ_OPTIONS="-use_value_profile=1 -jobs=2".
        read -r -a extra <<<"${FUZZ_OPTIONS:-}"
        options+=("${extra[@]}")
        log="$scratch/logs/$target.log"
        started=$(date +%s)
        code=0
        OAUTH2_FUZZ_TARGET="$target" "$binary" "${options[@]}" "$work" "Fuzz/Corpus/$target" >"$log" 2>&1 || code=$?
        if [ "$code" -eq 0 ]; then
            finding="nothing found"
        else
            what=$(grep -m1 -E 'Fatal error|ERROR: AddressSanitizer|ERROR: libFuzzer|ERROR: LeakSanitizer' "$log" || echo "exit status $code")
            finding="FOUND: $what (input: $(grep -o "$scratch/artifacts/[^ ]*" "$log" | tail -1), log: $log)"
            status=1
        fi
        executions=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
        added=$(grep -o 'stat::new_units_added: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
        echo "fuzz: $target: $(( $(date +%s) - started )) s, $executions executions, $added new inputs, $finding"
        ;;
    merge)
        # Edges only (no hit counts) and a greedy set cover keep the additions
        # few; then at most FUZZ_MERGE_LIMIT of them, the smallest, so the
        # committed corpus stays small enough to read and to replay in make test.
        fresh="$scratch/merge/$target"
        committed="$PWD/Fuzz/Corpus/$target"
        rm -rf "$fresh"
        mkdir -p "$fresh"
        cp "Fuzz/Corpus/$target/"* "$fresh/"
        OAUTH2_FUZZ_TARGET="$target" "$binary" -set_cover_merge=1 -use_counters=0 -max_len=1024 \
            "$fresh" "$work" >"$scratch/logs/$target-merge.log" 2>&1
        added=0
        while IFS= read -r name; do
            cp "$fresh/$name" "$committed/$name"
            added=$((added + 1))
        done < <(cd "$fresh" && for name in *; do [ -e "$committed/$name" ] || echo "$(wc -c <"$name") $name"; done \
                 | sort -n | head -n "${FUZZ_MERGE_LIMIT:-25}" | cut -d' ' -f2)
        echo "fuzz: $target: $added inputs added to Fuzz/Corpus/$target ($(ls "Fuzz/Corpus/$target" | wc -l) files)"
        ;;
    *)
        echo "usage: scripts/fuzz.sh run|merge [TARGET...]" >&2
        exit 64
        ;;
    esac
done
exit "$status"

#!/bin/sh
# Builds Cairn's fuzz targets (libFuzzer under AddressSanitizer) and runs each one:
# first over its saved crashers (Regressions/<target>/, each must pass now), then fuzzing for
# FUZZ_SECONDS (default 60) from the seed corpus (Corpus/<target>/) plus the working corpus
# kept in the build directory, with the libFuzzer dictionary Dictionaries/<target>.dict when
# there is one. A crash fails the run; its input is saved under <scratch>/artifacts/<target>/.
# See Docs/Testing.md.
set -u
cd "$(dirname "$0")"
SWIFT=${SWIFT:-swift}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
SCRATCH=${FUZZ_SCRATCH:-.build}
TARGETS=${FUZZ_TARGETS:-"fuzz-log-record fuzz-value-codec fuzz-log-segment fuzz-scenario-file"}

# One -sanitize list through -Xswiftc: two --sanitize flags can drop one and give a fuzzer
# without coverage. lld, because gold warns about ASan's local symbols.
$SWIFT build --scratch-path "$SCRATCH" --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld || exit 1
BIN="$SCRATCH/debug"
# The leak checker reports false leaks on Linux; libFuzzer prints its own crash reports.
export ASAN_OPTIONS=detect_leaks=0
export SWIFT_BACKTRACE=enable=no

status=0
for target in $TARGETS; do
    work="$SCRATCH/corpus/$target"
    artifacts="$SCRATCH/artifacts/$target"
    log="$SCRATCH/$target.log"
    mkdir -p "$work" "$artifacts"
    regressions=$(ls Regressions/$target/ 2>/dev/null | grep -v '^README' | sed "s#^#Regressions/$target/#")
    if [ -n "$regressions" ]; then
        # shellcheck disable=SC2086
        if ! "$BIN/$target" $regressions > "$SCRATCH/$target-regressions.log" 2>&1; then
            echo "$target: a saved crasher fails again:"
            tail -40 "$SCRATCH/$target-regressions.log"
            status=1
        fi
    fi
    dictionary=""
    [ -f "Dictionaries/$target.dict" ] && dictionary="-dict=Dictionaries/$target.dict"
    # shellcheck disable=SC2086
    "$BIN/$target" -max_total_time="$FUZZ_SECONDS" -detect_leaks=0 -print_final_stats=1 $dictionary \
        -artifact_prefix="$artifacts/" "$work" "Corpus/$target" > "$log" 2>&1
    code=$?
    if ! grep -q "INFO: Loaded [0-9]* modules" "$log"; then
        echo "$target: no 'INFO: Loaded N modules' line: the build has no coverage instrumentation"
        status=1
    fi
    executions=$(grep "stat::number_of_executed_units" "$log" | awk '{print $2}')
    coverage=$(grep -E "DONE|pulse|NEW" "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    corpus=$(ls "$work" | wc -l)
    crashes=$(ls "$artifacts" | wc -l)
    echo "$target: ${executions:-0} executions in ${FUZZ_SECONDS} s, coverage ${coverage:-?} edges, working corpus $corpus inputs, crashers saved $crashes"
    if [ "$code" -ne 0 ]; then
        echo "$target: the fuzzer stopped with status $code:"
        grep -v '^#' "$log" | tail -40
        status=1
    fi
done
exit $status

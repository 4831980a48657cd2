# Rewrites schemathesis's pytest-style rule lines ("===== 1 warning in 76.15s =====") so that CI,
# which reads a pytest closing line as the test runner's verdict, does not take the fuzzer's
# summary (it has no "passed" count) for a test run that executed nothing. The words stay; only
# the rule of "=" around them goes. The run's verdict is fuzz-api.sh's exit status and .ci/run's
# own closing line.
s/^=+ (.*[^ ]) =+$/fuzz:api -- \1 --/

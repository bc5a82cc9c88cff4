"""`gpu2npu check`: the CI gate. Findings, inline suppressions, a baseline, output formats."""

"""The commands of the CLI, one module each (``check`` a package). A command puts the project
service (gpu2npu.project) and the report writers together; no command imports another."""

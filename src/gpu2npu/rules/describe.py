"""One line saying what a rule does, for tables and `gpu2npu rules list`."""

from __future__ import annotations


def describe(rule) -> str:
    f = rule.fields
    if rule.kind == "ApiStatusRule":
        return f"report {f['api']} as {f['status']}"
    if rule.kind == "InsertImportRule":
        return f"insert 'import {f['module']}' after the first import of {f['after_module']}"
    if rule.kind == "RemoveImportRule":
        return f"remove 'import {f['module']}'"
    if rule.kind == "ModuleNameModifyRule":
        return f"{f['parent_module']}.{f['old_name']} -> {f['parent_module']}.{f['new_name']}"
    if "old_keyword" in f:
        return f"{f['func_name']}({f['old_keyword']}=...) -> ({f['new_keyword']}=...)"
    if "str_old" in f:
        return f"string '{f['str_old']}' -> '{f['str_new']}'"
    if rule.kind == "MethodRenameRule" or (rule.kind == "FuncNameModifyRule" and "." not in f["old_name"]):
        return f".{f['old_name']}(...) -> .{f['new_name'].rsplit('.', 1)[-1]}(...) on any receiver"
    if rule.kind == "ReplaceAttributeRule" and "." not in f["old_name"]:
        return f".{f['old_name']} -> .{f['new_name']} on any receiver"
    if "old_name" in f:
        new = f["new_name"] if f["new_name"] is not None else "(kept: no NPU counterpart)"
        return f"{f['old_name']} -> {new}"
    if rule.kind == "DeviceArgRule":
        where = f"arg {f['arg_idx']}" if f["arg_idx"] >= 0 else f"{f['arg_keyword']}="
        return f"{f['func_name']}({where}): int device index -> '{f['device_type']}:N'"
    if rule.kind == "ArgsModifyRule":
        where = f"arg {f['arg_idx']}" if f["arg_idx"] >= 0 else f"{f['arg_keyword']}="
        action = "delete" if f["arg_new"] == "" else f"set to {f['arg_new']}"
        return f"{f['func_name']}({where}): {action}"
    return rule.kind

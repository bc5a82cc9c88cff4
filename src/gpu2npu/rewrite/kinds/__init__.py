"""Rule kinds, one module each. A kind module declares:

* ``NAME`` -- the key used in rule files (msFmkTransplt's names where it has one);
* ``FIELDS`` -- its fields (``gpu2npu.rules.model.Field``);
* ``validate(fields)`` -- a readable problem, or None;
* ``compile(rule, index)`` -- files the rule in the index table its matcher reads;
* ``trigger_words(rule)`` -- strings that must appear in a file for the rule to fire there.

A new kind is one new module and one line below.
"""

from gpu2npu.rewrite.kinds import (
    api_status,
    args,
    attribute,
    device_arg,
    env_var,
    func_name,
    import_insert,
    import_remove,
    keyword,
    method,
    module_name,
    name_rename,
    string,
)

KINDS = {
    kind.NAME: kind
    for kind in (
        func_name,
        module_name,
        args,
        string,
        attribute,
        name_rename,
        method,
        keyword,
        device_arg,
        env_var,
        import_insert,
        import_remove,
        api_status,
    )
}

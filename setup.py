"""Build hook for the optional C accelerator of down-conversion (everything else is in pyproject.toml).

``protocol.records._cdownconvert`` is marked optional: where no C compiler is
available the build goes on without it and ``protocol.records`` uses its
pure-Python loop, which gives byte-identical output.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "protocol.records._cdownconvert",
            [f"protocol/records/{name}.c" for name in ("_cdownconvert", "_ccrc32", "_ccrc32c", "_clz4", "_clz4_threads", "_cscan", "_clegacy", "_cencode")],
            depends=["protocol/records/_cdownconvert.h", "protocol/records/_clz4.h"],
            extra_compile_args=["-O3"],
            extra_link_args=["-pthread"],
            optional=True,
        )
    ]
)

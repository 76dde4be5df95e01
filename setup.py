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
            ["protocol/records/_cdownconvert.c", "protocol/records/_clz4.c", "protocol/records/_cscan.c"],
            depends=["protocol/records/_cdownconvert.h"],
            extra_compile_args=["-O3"],
            extra_link_args=["-pthread"],
            optional=True,
        )
    ]
)

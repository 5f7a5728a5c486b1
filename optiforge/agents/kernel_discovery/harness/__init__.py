"""Programs Kernel Discovery runs *inside* a sandbox, shipped as files (never imported here).

They import only the interpreter's libraries and the optiforge modules shipped with them
(``optiforge.errors``, ``optiforge.solvers.gp``, ``optiforge.solvers.bo``).
"""

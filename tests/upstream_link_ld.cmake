# cmake -DOUT=FILE -DSCRIPT=FILE -DSTARTUP=ADDR -P upstream_link_ld.cmake:
# FILE = "STARTUP_ADDR = ADDR;" and then upstream's link script SCRIPT,
# byte for byte (its build passes the address as --defsym=STARTUP_ADDR).
file(READ "${SCRIPT}" body)
file(WRITE "${OUT}" "/* STARTUP_ADDR as upstream's build passes it (--defsym); then ${SCRIPT}, verbatim */\nSTARTUP_ADDR = ${STARTUP};\n${body}")

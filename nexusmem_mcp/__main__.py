from nexusmem_mcp.server import main

main()

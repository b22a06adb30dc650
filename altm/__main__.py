from altm.interfaces.cli import main

main()

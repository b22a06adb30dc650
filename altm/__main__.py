from altm.services.cli import main

main()

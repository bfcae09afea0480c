from sori.cli import main

raise SystemExit(main())

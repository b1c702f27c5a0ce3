"""Writes gold.tsv: our own English->German sentences with hand-made sure and possible word links.

Each entry below is the English sentence, then its German translation as tokens, each token followed by the
English word indices it links to (0-based, counting the English words as `alignment.words` splits them):
`Hund/1` is a sure link to English word 1, `hat/p2` a possible one, `Parkbank/7,8` links to two words, and a
token with no slash (a comma German needs) links to nothing. The German text of gold.tsv is these tokens joined
back with the spacing of written German. Deterministic: `python tests/data/alignment/make_gold.py`.
See README.md beside this file for the linking guidelines.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
from transformer.training.alignment import format_links, words  # noqa: E402

DEV = 50  # the first DEV entries choose the read-out; the rest score it

ENTRIES = """
The old man feeds the ducks at the pond.
Der/0 alte/1 Mann/2 füttert/3 die/4 Enten/5 am/6,7 Teich/8 ./9

A boy in a red shirt is jumping into a lake.
Ein/0 Junge/1 in/2 einem/3 roten/4 Hemd/5 springt/7,p6 in/8 einen/9 See/10 ./11

My sister forgot her umbrella on the train.
Meine/0 Schwester/1 hat/p2 ihren/3 Regenschirm/4 im/5,6 Zug/7 vergessen/2 ./8

Two dogs are chasing a ball across the beach.
Zwei/0 Hunde/1 jagen/3,p2 einen/4 Ball/5 über/6 den/7 Strand/8 ./9

We should leave before it starts to rain.
Wir/0 sollten/1 gehen/2 , bevor/3 es/4 anfängt/5 zu/6 regnen/7 ./8

A woman in a blue coat is waiting for the bus.
Eine/0 Frau/1 in/2 einem/3 blauen/4 Mantel/5 wartet/7,p6 auf/8 den/9 Bus/10 ./11

Could you please open the kitchen window?
Könntest/0 du/1 bitte/2 das/4 Küchenfenster/5,6 öffnen/3 ?/7

The children built a huge sandcastle this morning.
Die/0 Kinder/1 haben/p2 heute/p6 Morgen/7 eine/3 riesige/4 Sandburg/5 gebaut/2 ./8

I have never eaten such a delicious soup.
Ich/0 habe/1 noch/p2 nie/2 so/4 eine/5 leckere/6 Suppe/7 gegessen/3 ./8

A cyclist rides past a row of parked cars.
Ein/0 Radfahrer/1 fährt/2 an/p3 einer/4 Reihe/5 geparkter/7,p6 Autos/8 vorbei/3 ./9

The kitchen smells of fresh bread.
Die/0 Küche/1 riecht/2 nach/3 frischem/4 Brot/5 ./6

He is reading a newspaper on a park bench.
Er/0 liest/2,p1 eine/3 Zeitung/4 auf/5 einer/6 Parkbank/7,8 ./9

Where did you buy these green shoes?
Wo/0 hast/p1 du/2 diese/4 grünen/5 Schuhe/6 gekauft/3 ?/7

A little girl is blowing out the candles on her birthday cake.
Ein/0 kleines/1 Mädchen/2 bläst/4,p3 die/6 Kerzen/7 auf/8 ihrem/9 Geburtstagskuchen/10,11 aus/5 ./12

Our neighbours have a very loud parrot.
Unsere/0 Nachbarn/1 haben/2 einen/3 sehr/4 lauten/5 Papagei/6 ./7

The train was late again because of the snow.
Der/0 Zug/1 war/2 wegen/5,p6 des/7 Schnees/8 wieder/4 verspätet/3 ./9

A man in a suit is talking on his phone.
Ein/0 Mann/1 im/2,p3 Anzug/4 telefoniert/6,9,p5,p7,p8 ./10

I forgot to turn off the oven.
Ich/0 habe/p1 vergessen/1 , den/5 Ofen/6 auszuschalten/3,4,p2 ./7

She wants to learn how to play the violin.
Sie/0 möchte/1 lernen/3,p2 , wie/4 man/p5 Geige/8,p7 spielt/6 ./9

Three friends are sitting around a campfire at night.
Drei/0 Freunde/1 sitzen/3,p2 nachts/8,p7 um/4 ein/5 Lagerfeuer/6 ./9

The bakery on the corner closes at noon on Saturdays.
Die/0 Bäckerei/1 an/2 der/3 Ecke/4 schließt/5 samstags/9,p8 mittags/7,p6 ./10

A group of tourists is taking photos of the cathedral.
Eine/0 Gruppe/1 von/2 Touristen/3 macht/5,p4 Fotos/6 von/7 der/8 Kathedrale/9 ./10

Please don't forget to water the plants on the balcony.
Bitte/0 vergiss/2 nicht/1 , die/5 Pflanzen/6 auf/7 dem/8 Balkon/9 zu/3 gießen/4 ./10

A brown horse is grazing in a green meadow.
Ein/0 braunes/1 Pferd/2 grast/4,p3 auf/5 einer/6 grünen/7 Wiese/8 ./9

I usually drink tea in the afternoon.
Ich/0 trinke/2 nachmittags/6,p4,p5 meistens/1 Tee/3 ./7

The waiter brought us the wrong dessert.
Der/0 Kellner/1 hat/p2 uns/3 den/4 falschen/5 Nachtisch/6 gebracht/2 ./7

Two women are carrying baskets of vegetables at a market.
Zwei/0 Frauen/1 tragen/3,p2 Körbe/4 mit/p5 Gemüse/6 auf/7 einem/8 Markt/9 ./10

He has been learning Spanish for two years.
Er/0 lernt/3,p1,p2 seit/5 zwei/6 Jahren/7 Spanisch/4 ./8

The little boy is hiding behind the curtain.
Der/0 kleine/1 Junge/2 versteckt/4,p3 sich/p4 hinter/5 dem/6 Vorhang/7 ./8

Is there a pharmacy near the station?
Gibt/p0,p1 es/p0,p1 eine/2 Apotheke/3 in/p4 der/p4 Nähe/4 des/5 Bahnhofs/6 ?/7

A chef is slicing onions in a busy kitchen.
Ein/0 Koch/1 schneidet/3,p2 Zwiebeln/4 in/5 einer/6 geschäftigen/7 Küche/8 ./9

My grandmother knits warm socks for the whole family.
Meine/0 Großmutter/1 strickt/2 warme/3 Socken/4 für/5 die/6 ganze/7 Familie/8 ./9

We missed the last bus and had to walk home.
Wir/0 haben/p1 den/2 letzten/3 Bus/4 verpasst/1 und/5 mussten/6,p7 nach/p9 Hause/9 laufen/8 ./10

A man is repairing the roof of an old barn.
Ein/0 Mann/1 repariert/3,p2 das/4 Dach/5 einer/7,p6 alten/8 Scheune/9 ./10

The tomato soup is still too hot to eat.
Die/0 Tomatensuppe/1,2 ist/3 noch/4 zu/5 heiß/6 zum/7 Essen/8 ./9

Children in raincoats are jumping in puddles.
Kinder/0 in/1 Regenmänteln/2 springen/4,p3 in/5 Pfützen/6 ./7

I can't find my reading glasses anywhere.
Ich/0 kann/1 meine/3 Lesebrille/4,5 nirgends/6,p1 finden/2 ./7

A dog with a stick in its mouth swims across the river.
Ein/0 Hund/1 mit/2 einem/3 Stock/4 im/5,p6 Maul/7 schwimmt/8 über/9 den/10 Fluss/11 ./12

They are painting the fence white.
Sie/0 streichen/2,p1 den/3 Zaun/4 weiß/5 an/p2 ./6

The doctor told him to stay in bed.
Der/0 Arzt/1 hat/p2 ihm/3 gesagt/2 , er/p3 solle/p4 im/6 Bett/7 bleiben/5 ./8

An elderly couple is walking hand in hand along the shore.
Ein/0 älteres/1 Paar/2 geht/4,p3 Hand/5 in/6 Hand/7 am/9,p8 Ufer/10 entlang/8 ./11

How long does the trip to the airport take?
Wie/0 lange/1 dauert/8,p2 die/3 Fahrt/4 zum/5,6 Flughafen/7 ?/9

She painted the walls of her bedroom yellow.
Sie/0 hat/p1 die/2 Wände/3 ihres/5,p4 Schlafzimmers/6 gelb/7 gestrichen/1 ./8

A boy and his father are flying a kite on a hill.
Ein/0 Junge/1 und/2 sein/3 Vater/4 lassen/p5,p6 auf/9 einem/10 Hügel/11 einen/7 Drachen/8 steigen/p6 ./12

Tom lent me his bicycle for the weekend.
Tom/0 hat/p1 mir/2 sein/3 Fahrrad/4 für/5 das/6 Wochenende/7 geliehen/1 ./8

The students are listening carefully to their teacher.
Die/0 Schüler/1 hören/3,p2 ihrer/6 Lehrerin/7 aufmerksam/4 zu/3,p5 ./8

It is raining, so we are staying at home today.
Es/0 regnet/2,p1 ,/3 also/4 bleiben/7,p6 wir/5 heute/10 zu/8 Hause/9 ./11

A woman is selling flowers from a small cart.
Eine/0 Frau/1 verkauft/3,p2 Blumen/4 von/5 einem/6 kleinen/7 Wagen/8 ./9

I would like a cup of coffee with milk, please.
Ich/0 hätte/p1,p2 gern/p1,p2 eine/3 Tasse/4 Kaffee/6,p5 mit/7 Milch/8 ,/9 bitte/10 ./11

The cat is sleeping on top of the washing machine.
Die/0 Katze/1 schläft/3,p2 auf/4,p5,p6 der/7 Waschmaschine/8,9 ./10

A young woman is playing the guitar in the street.
Eine/0 junge/1 Frau/2 spielt/4,p3 auf/7 der/8 Straße/9 Gitarre/6,p5 ./10

We have to get up very early on Sunday.
Wir/0 müssen/1,p2 am/7 Sonntag/8 sehr/5 früh/6 aufstehen/3,4 ./9

A man in an orange vest is sweeping the sidewalk.
Ein/0 Mann/1 in/2 einer/3 orangefarbenen/4 Weste/5 fegt/7,p6 den/8 Gehweg/9 ./10

Which bus goes to the city centre?
Welcher/0 Bus/1 fährt/2 ins/3,4 Stadtzentrum/5,6 ?/7

My brother broke his arm while skiing.
Mein/0 Bruder/1 hat/p2 sich/p3 beim/5 Skifahren/6 den/p3 Arm/4 gebrochen/2 ./7

Two girls are sharing an ice cream on a bench.
Zwei/0 Mädchen/1 teilen/3,p2 sich/p3 ein/4 Eis/5,6 auf/7 einer/8 Bank/9 ./10

The library is quiet in the early morning.
Die/0 Bibliothek/1 ist/2 am/4,5 frühen/6 Morgen/7 ruhig/3 ./8

Did you remember to lock the front door?
Hast/p0 du/1 daran/p2 gedacht/2 , die/5 Haustür/6,7 abzuschließen/4,p3 ?/8

A fisherman is mending his nets on the pier.
Ein/0 Fischer/1 flickt/3,p2 seine/4 Netze/5 auf/6 dem/7 Steg/8 ./9

I think I left my keys in the other car.
Ich/0 glaube/1 , ich/2 habe/p3 meine/4 Schlüssel/5 im/6,7 anderen/8 Auto/9 gelassen/3 ./10

A crowd is watching fireworks over the harbour.
Eine/0 Menschenmenge/1 schaut/3,p2 sich/p3 das/p4 Feuerwerk/4 über/5 dem/6 Hafen/7 an/3 ./8

Her cousin speaks three languages fluently.
Ihre/0 Cousine/1 spricht/2 drei/3 Sprachen/4 fließend/5 ./6

The baby fell asleep in the car seat.
Das/0 Baby/1 ist/p2 im/4,5 Autositz/6,7 eingeschlafen/2,3 ./8

A surfer rides a large wave near the rocks.
Ein/0 Surfer/1 reitet/2 eine/3 große/4 Welle/5 in/p6 der/p6 Nähe/6 der/7 Felsen/8 ./9

We are planning a trip to the mountains in July.
Wir/0 planen/2,p1 im/8 Juli/9 eine/3 Reise/4 in/5 die/6 Berge/7 ./10

Can I pay by card at this counter?
Kann/0 ich/1 an/5 diesem/6 Schalter/7 mit/3 Karte/4 bezahlen/2 ?/8

A man wearing a helmet is climbing a steep rock wall.
Ein/0 Mann/1 mit/p2 Helm/4,p3 klettert/6,p5 eine/7 steile/8 Felswand/9,10 hinauf/p6 ./11

The shop around the corner sells cheap umbrellas.
Der/0 Laden/1 um/2 die/3 Ecke/4 verkauft/5 billige/6 Regenschirme/7 ./8

I will call you when I arrive at the hotel.
Ich/0 rufe/2,p1 dich/3 an/2 , wenn/4 ich/5 im/7,8 Hotel/9 ankomme/6 ./10

Several people are waiting in line outside a bakery.
Mehrere/0 Leute/1 stehen/p2,p3,p4,p5 vor/6 einer/7 Bäckerei/8 Schlange/p3,p4,p5 ./9

The teacher wrote the answer on the board.
Die/0 Lehrerin/1 schrieb/2 die/3 Antwort/4 an/5 die/6 Tafel/7 ./8

A black cat is sitting on the windowsill.
Eine/0 schwarze/1 Katze/2 sitzt/4,p3 auf/5 dem/6 Fensterbrett/7 ./8

He always forgets the birthdays of his friends.
Er/0 vergisst/2 immer/1 die/3 Geburtstage/4 seiner/6,p5 Freunde/7 ./8

Two boys are playing chess in the park.
Zwei/0 Jungen/1 spielen/3,p2 im/5,6 Park/7 Schach/4 ./8

This winter jacket is too small for me now.
Diese/0 Winterjacke/1,2 ist/3 mir/7,p6 jetzt/8 zu/4 klein/5 ./9

A woman is pushing a pram through the snow.
Eine/0 Frau/1 schiebt/3,p2 einen/4 Kinderwagen/5 durch/6 den/7 Schnee/8 ./9

We need more chairs for the guests.
Wir/0 brauchen/1 mehr/2 Stühle/3 für/4 die/5 Gäste/6 ./7

The man with the beard is selling hot chestnuts.
Der/0 Mann/1 mit/2 dem/3 Bart/4 verkauft/6,p5 heiße/7 Maronen/8 ./9

Why are you laughing at my hat?
Warum/0 lachst/3,p1 du/2 über/4 meinen/5 Hut/6 ?/7

A small boat is sailing across the calm sea.
Ein/0 kleines/1 Boot/2 segelt/4,p3 über/5 das/6 ruhige/7 Meer/8 ./9

My parents moved to a smaller flat last year.
Meine/0 Eltern/1 sind/p2 letztes/7 Jahr/8 in/3 eine/4 kleinere/5 Wohnung/6 gezogen/2 ./9

The dog barks whenever someone rings the bell.
Der/0 Hund/1 bellt/2 immer/p3 , wenn/3 jemand/4 klingelt/5,7,p6 ./8

A construction worker is standing on a ladder.
Ein/0 Bauarbeiter/1,2 steht/4,p3 auf/5 einer/6 Leiter/7 ./8

Could you tell me the way to the natural history museum?
Könnten/0 Sie/1 mir/3 den/4 Weg/5 zum/6,7 Naturkundemuseum/8,9,10 sagen/2 ?/11

The girls are dancing in a circle on the grass.
Die/0 Mädchen/1 tanzen/3,p2 im/4,p5 Kreis/6 auf/7 dem/8 Rasen/9 ./10

I am really looking forward to the summer holidays.
Ich/0 freue/p1,p3,p4 mich/p3,p4 schon/p2 sehr/2 auf/p4,p5 die/6 Sommerferien/7,8 ./9

A mechanic is checking the tyres of a truck.
Ein/0 Mechaniker/1 prüft/3,p2 die/4 Reifen/5 eines/7,p6 Lastwagens/8 ./9

She put the milk back in the fridge.
Sie/0 hat/p1 die/2 Milch/3 zurück/4 in/5 den/6 Kühlschrank/7 gestellt/1 ./8

The streets were empty after midnight.
Die/0 Straßen/1 waren/2 nach/4 Mitternacht/5 leer/3 ./6

A group of children is feeding goats at a farm.
Eine/0 Gruppe/1 Kinder/3,p2 füttert/5,p4 Ziegen/6 auf/7 einem/8 Bauernhof/9 ./10

Do you know if the post office is still open?
Weißt/2,p0 du/1 , ob/3 die/4 Post/5,p6 noch/8 geöffnet/9 ist/7 ?/10

An old woman is feeding pigeons in the square.
Eine/0 alte/1 Frau/2 füttert/4,p3 Tauben/5 auf/6 dem/7 Platz/8 ./9

I have lost the receipt for this lamp.
Ich/0 habe/1 den/3 Kassenbon/4 für/5 diese/6 Lampe/7 verloren/2 ./8

The football players are celebrating a goal.
Die/0 Fußballspieler/1,2 feiern/4,p3 ein/5 Tor/6 ./7

It takes twenty minutes to walk to school.
Man/p0 braucht/1,p0 zwanzig/2 Minuten/3 zu/p4,p5 Fuß/p5 zur/6 Schule/7 ./8

A man and a woman are cycling along a country road.
Ein/0 Mann/1 und/2 eine/3 Frau/4 fahren/6,p5 mit/p6 dem/p6 Fahrrad/6 eine/8 Landstraße/9,10 entlang/7 ./11

Please speak more slowly, my German is not very good.
Bitte/0 sprich/1 langsamer/2,3 ,/4 mein/5 Deutsch/6 ist/7 nicht/8 sehr/9 gut/10 ./11

The puppy is chewing on an old shoe.
Der/0 Welpe/1 kaut/3,p2 auf/4 einem/5 alten/6 Schuh/7 herum/p3 ./8

A man is selling newspapers at the entrance of the station.
Ein/0 Mann/1 verkauft/3,p2 Zeitungen/4 am/5,6 Eingang/7 des/9,p8 Bahnhofs/10 ./11

We ate pizza and watched a film yesterday evening.
Wir/0 haben/p1,p4 gestern/7 Abend/8 Pizza/2 gegessen/1 und/3 einen/5 Film/6 geschaut/4 ./9

A waiter is carrying a tray of drinks.
Ein/0 Kellner/1 trägt/3,p2 ein/4 Tablett/5 mit/p6 Getränken/7 ./8

My phone battery is almost empty.
Mein/0 Handyakku/1,2 ist/3 fast/4 leer/5 ./6

The children are building a snowman in the garden.
Die/0 Kinder/1 bauen/3,p2 im/6,7 Garten/8 einen/4 Schneemann/5 ./9

He apologised for being late.
Er/0 hat/p1 sich/p1 für/2 seine/p3 Verspätung/4,p3 entschuldigt/1 ./5

A woman in a yellow dress is dancing with a child.
Eine/0 Frau/1 in/2 einem/3 gelben/4 Kleid/5 tanzt/7,p6 mit/8 einem/9 Kind/10 ./11

The coffee machine in our office is broken again.
Die/0 Kaffeemaschine/1,2 in/3 unserem/4 Büro/5 ist/6 schon/p8 wieder/8 kaputt/7 ./9

Two dogs are playing tug of war with a rope.
Zwei/0 Hunde/1 spielen/3,p2 mit/7 einem/8 Seil/9 Tauziehen/4,6,p5 ./10

I don't understand the last question on the form.
Ich/0 verstehe/2 die/3 letzte/4 Frage/5 auf/6 dem/7 Formular/8 nicht/1 ./9

A man is sleeping in a hammock between two trees.
Ein/0 Mann/1 schläft/3,p2 in/4 einer/5 Hängematte/6 zwischen/7 zwei/8 Bäumen/9 ./10

The weather will be better at the weekend.
Das/0 Wetter/1 wird/2 am/5,6 Wochenende/7 besser/4 sein/3 ./8

A girl with curly hair is drawing with chalk on the ground.
Ein/0 Mädchen/1 mit/2 lockigen/3 Haaren/4 malt/6,p5 mit/7 Kreide/8 auf/9 den/10 Boden/11 ./12

Anna is baking a cake for her grandfather.
Anna/0 backt/2,p1 einen/3 Kuchen/4 für/5 ihren/6 Großvater/7 ./8

The lights went out during the storm.
Während/4 des/5 Sturms/6 ging/2 das/0 Licht/1 aus/3 ./7

A man is carrying a surfboard towards the water.
Ein/0 Mann/1 trägt/3,p2 ein/4 Surfbrett/5 zum/6,7 Wasser/8 ./9

Could you turn the music down a little?
Könntest/0 du/1 die/3 Musik/4 ein/6 bisschen/7 leiser/p2,p5 machen/p2,p5 ?/8

Many people are swimming in the lake on a hot day.
An/7 einem/8 heißen/9 Tag/10 schwimmen/3,p2 viele/0 Menschen/1 im/4,5 See/6 ./11

She gave her old books to the library.
Sie/0 hat/p1 ihre/2 alten/3 Bücher/4 der/6,p5 Bibliothek/7 geschenkt/1 ./8

A policeman is directing traffic at a busy crossing.
Ein/0 Polizist/1 regelt/3,p2 den/p4 Verkehr/4 an/5 einer/6 belebten/7 Kreuzung/8 ./9

I still need to buy a present for my mother.
Ich/0 muss/2,p3 noch/1 ein/5 Geschenk/6 für/7 meine/8 Mutter/9 kaufen/4 ./10

The boy in the green cap is eating a sandwich.
Der/0 Junge/1 mit/2 der/3 grünen/4 Mütze/5 isst/7,p6 ein/8 Sandwich/9 ./10

We couldn't find a parking space near the stadium.
Wir/0 konnten/1 in/p6 der/p6 Nähe/6 des/7 Stadions/8 keinen/1,p3 Parkplatz/4,5 finden/2 ./9

A family is having a picnic under a large tree.
Eine/0 Familie/1 macht/p2,p3 ein/4 Picknick/5 unter/6 einem/7 großen/8 Baum/9 ./10

The museum shop sells postcards and small toys.
Der/0 Museumsladen/1,2 verkauft/3 Postkarten/4 und/5 kleines/6 Spielzeug/7 ./8

He smiled when he saw the photo.
Er/0 lächelte/1 , als/2 er/3 das/5 Foto/6 sah/4 ./7

A woman is hanging washing on a line in the garden.
Eine/0 Frau/1 hängt/3,p2 im/8,9 Garten/10 Wäsche/4 auf/5 eine/6 Leine/7 ./11

The hotel room had a view of the sea.
Das/0 Hotelzimmer/1,2 hatte/3 einen/4 Blick/5 auf/6 das/7 Meer/8 ./9

My little brother is still afraid of the dark.
Mein/0 kleiner/1 Bruder/2 hat/p3,p5 immer/4 noch/4 Angst/5 vor/6 der/7 Dunkelheit/8 ./9

Workers are unloading boxes from a lorry.
Arbeiter/0 laden/2,p1 Kisten/3 von/4 einem/5 Lastwagen/6 ab/2 ./7

What time does the film start on Friday?
Wann/p0,p1 fängt/5,p2 der/3 Film/4 am/6 Freitag/7 an/5 ?/8

A man is playing the accordion on a bridge.
Ein/0 Mann/1 spielt/3,p2 auf/6 einer/7 Brücke/8 Akkordeon/5,p4 ./9

You should wear a warm hat in this weather.
Du/0 solltest/1 bei/6 diesem/7 Wetter/8 eine/3 warme/4 Mütze/5 tragen/2 ./9

The boys are racing each other down the hill.
Die/0 Jungen/1 rennen/3,p2 um/p3,p4,p5 die/p3 Wette/p3,p4,p5 den/7 Hügel/8 hinunter/6 ./9

I've already seen this film twice.
Ich/0 habe/0 diesen/3 Film/4 schon/1 zweimal/5 gesehen/2 ./6

A dog is sleeping in front of the fireplace.
Ein/0 Hund/1 schläft/3,p2 vor/5,p4,p6 dem/7 Kamin/8 ./9

The price of the room includes breakfast and parking.
Der/0 Preis/1 des/3,p2 Zimmers/4 enthält/5 Frühstück/6 und/7 Parkplatz/8 ./9

A young man is skateboarding down a ramp.
Ein/0 junger/1 Mann/2 fährt/4,p3 mit/p4 dem/p4 Skateboard/4 eine/6 Rampe/7 hinunter/5 ./8

We will meet in front of the cinema at eight.
Wir/0 treffen/2,p1 uns/p2 um/8 acht/9 vor/4,p3,p5 dem/6 Kino/7 ./10

Her husband is allergic to cats and dogs.
Ihr/0 Mann/1 ist/2 allergisch/3 gegen/4 Katzen/5 und/6 Hunde/7 ./8

A woman is reading to a child in a library.
Eine/0 Frau/1 liest/3,p2 einem/5,p4 Kind/6 in/7 einer/8 Bibliothek/9 vor/3 ./10

The bridge was closed for repairs.
Die/0 Brücke/1 war/2 wegen/4 Reparaturen/5 gesperrt/3 ./6

Two men are loading furniture into a van.
Zwei/0 Männer/1 laden/3,p2 Möbel/4 in/5 einen/6 Transporter/7 ./8

I'm sorry, I didn't hear the doorbell.
Tut/p0,p1 mir/p0,p1 leid/p0,p1 ,/2 ich/3 habe/p4 die/6 Türklingel/7 nicht/4 gehört/5 ./8

A little boy is riding on his father's shoulders.
Ein/0 kleiner/1 Junge/2 sitzt/p3,p4 auf/5 den/p6 Schultern/8 seines/6 Vaters/7 ./9

The market is open every Wednesday morning.
Der/0 Markt/1 ist/2 jeden/4 Mittwochmorgen/5,6 geöffnet/3 ./7

A waitress is pouring coffee for two customers.
Eine/0 Kellnerin/1 schenkt/3,p2 zwei/6 Gästen/7,p5 Kaffee/4 ein/3 ./8

Turn left at the next traffic lights.
Biegen/0 Sie/p0 an/2 der/3 nächsten/4 Ampel/5,6 links/1 ab/0 ./7

The kids are splashing each other in the pool.
Die/0 Kinder/1 bespritzen/3,p2 sich/p4,p5 gegenseitig/4,5 im/6,7 Becken/8 ./9

This bread tastes better when it is fresh.
Dieses/0 Brot/1 schmeckt/2 besser/3 , wenn/4 es/5 frisch/7 ist/6 ./8

A man in a wheelchair is crossing the street.
Ein/0 Mann/1 im/2,p3 Rollstuhl/4 überquert/6,p5 die/7 Straße/8 ./9

Our flight was cancelled because of fog.
Unser/0 Flug/1 wurde/2 wegen/4,p5 Nebel/6 gestrichen/3 ./7

A girl is holding a balloon shaped like a heart.
Ein/0 Mädchen/1 hält/3,p2 einen/4 herzförmigen/6,9,p7,p8 Luftballon/5 ./10

Everyone at the table laughed at his terrible joke.
Alle/0 am/1,2 Tisch/3 lachten/4 über/5 seinen/6 schrecklichen/7 Witz/8 ./9

A man is walking three dogs on leashes.
Ein/0 Mann/1 führt/3,p2 drei/4 Hunde/5 an/6 der/p7 Leine/7 aus/3 ./8

The keys are in the drawer under the phone.
Die/0 Schlüssel/1 sind/2 in/3 der/4 Schublade/5 unter/6 dem/7 Telefon/8 ./9

People are dancing at a wedding in a garden.
Menschen/0 tanzen/2,p1 auf/3 einer/4 Hochzeit/5 in/6 einem/7 Garten/8 ./9

He cut his finger while peeling potatoes.
Er/0 hat/p1 sich/p2 beim/4 Kartoffelschälen/5,6 in/p1 den/p2 Finger/3 geschnitten/1 ./7

A tired student is sleeping on a pile of books.
Ein/0 müder/1 Student/2 schläft/4,p3 auf/5 einem/6 Stapel/7 von/8 Büchern/9 ./10

Let's have lunch in the garden today.
Lass/0 uns/0 heute/6 im/3,4 Garten/5 zu/p1,p2 Mittag/2,p1 essen/p1,p2 ./7

Two girls in school uniforms are waiting at a crossing.
Zwei/0 Mädchen/1 in/2 Schuluniformen/3,4 warten/6,p5 an/7 einem/8 Fußgängerüberweg/9 ./10

The soup needs a little more salt.
Die/0 Suppe/1 braucht/2 ein/3 bisschen/4 mehr/5 Salz/6 ./7

A man is taking a photo of the sunset from a balcony.
Ein/0 Mann/1 fotografiert/3,5,p2,p4 den/7,p6 Sonnenuntergang/8 von/9 einem/10 Balkon/11 aus/p9 ./12

I fell off my bike on the way to work.
Ich/0 bin/p1 auf/5 dem/6 Weg/7 zur/8 Arbeit/9 vom/2,p3 Fahrrad/4 gefallen/1 ./10
"""


def german_text(tokens: list[str]) -> str:
    """Tokens joined with the spacing of written German: no space before punctuation."""
    return re.sub(r" ([.,?!:;])", r"\1", " ".join(tokens))


def parse_entry(english: str, annotated: str) -> tuple[str, str, set[tuple[int, int]], set[tuple[int, int]]]:
    """(English, German, sure, possible) of one entry; links are (English index, German index)."""
    n_en = len(words(english))
    tokens, sure, possible = [], set(), set()
    for j, item in enumerate(annotated.split()):
        word, _, links = item.rpartition("/") if "/" in item else (item, "", "")
        tokens.append(word)
        for link in filter(None, links.split(",")):
            i = int(link.lstrip("p"))
            assert 0 <= i < n_en, (english, item)
            (possible if link.startswith("p") else sure).add((i, j))
    german = german_text(tokens)
    assert words(german) == tokens, (german, tokens)
    assert not sure & possible, (english, sure & possible)
    return english, german, sure, possible | sure


def main() -> None:
    blocks = [b.strip().split("\n") for b in ENTRIES.strip().split("\n\n")]
    assert all(len(b) == 2 for b in blocks), [b for b in blocks if len(b) != 2]
    rows = [parse_entry(*b) for b in blocks]
    english = [r[0] for r in rows]
    assert len(set(english)) == len(english), "an English sentence twice"
    lines = ["# Our own English->German word alignments (tests/data/alignment/README.md). Written by"
             " tests/data/alignment/make_gold.py.",
             "# split\tenglish\tgerman\tlinks (English index first, 0-based; i-j sure, ipj possible)"]
    for k, (en, de, sure, possible) in enumerate(rows):
        lines.append("\t".join(("dev" if k < DEV else "test", en, de, format_links(sure, possible))))
    (HERE / "gold.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(rows)} pairs, {DEV} dev, {len(rows) - DEV} test")


if __name__ == "__main__":
    main()
